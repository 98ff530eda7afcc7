"""Verifies a JWT signed by the configured issuer; the only module that uses joserfc.

Only RS256, ES256 and EdDSA (also as RFC 9864's `Ed25519`) are accepted, the key is the issuer's
(by `kid`), and `iss`, `aud` (the client id), `exp`, `nbf` and `iat` are checked. Every failure is
the caller's bad token: 401.
"""

from __future__ import annotations

import time
from typing import Any

from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey, RSAKey
from joserfc.jwt import ClaimsOption, JWTClaimsRegistry

from switchboard.errors import Unauthorized
from switchboard.sso.issuer import Issuer

# The algorithm decides the key type, so that a key can never be used with an algorithm of another
# family (the HS256-with-the-public-key confusion) whatever the token's header says.
ALGORITHMS: dict[str, type[RSAKey | ECKey | OKPKey]] = {
    "RS256": RSAKey,
    "ES256": ECKey,
    "EdDSA": OKPKey,
    "Ed25519": OKPKey,  # RFC 9864's name for EdDSA on Ed25519; it deprecates "EdDSA" in JOSE
}
CURVES = {"ES256": "P-256", "EdDSA": "Ed25519", "Ed25519": "Ed25519"}
MAX_TOKEN_BYTES = 16 * 1024


def unverified_header(token: str) -> dict[str, Any]:
    try:
        header = jws.extract_compact(token.encode("ascii")).protected
    except (JoseError, ValueError, UnicodeError):
        raise Unauthorized("invalid token") from None
    return dict(header)


class TokenVerifier:
    def __init__(self, issuer: Issuer, client_id: str, leeway_seconds: int = 30) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self._leeway = leeway_seconds

    async def claims(self, token: str, *, nonce: str | None = None) -> dict[str, Any]:
        """The verified claims; with `nonce`, an ID token of the sign-in that sent that nonce."""
        if len(token) > MAX_TOKEN_BYTES:
            raise Unauthorized("invalid token")
        header = unverified_header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise Unauthorized("invalid token")
        kid = header.get("kid")
        key = await self.issuer.key(kid if isinstance(kid, str) else None)
        if key is None or not isinstance(key, ALGORITHMS[alg]):
            raise Unauthorized("invalid token")
        if not isinstance(key, RSAKey) and key.curve_name != CURVES[alg]:
            raise Unauthorized("invalid token")
        try:
            claims = dict(jwt.decode(token, key, algorithms=[alg]).claims)
            options: dict[str, ClaimsOption] = {
                "iss": {"essential": True, "value": self.issuer.issuer},
                "aud": {"essential": True, "value": self.client_id},
                "sub": {"essential": True},
                "exp": {"essential": True},
            }
            if nonce is not None:
                options["nonce"] = {"essential": True, "value": nonce}
            JWTClaimsRegistry(None, self._leeway, **options).validate(claims)
        except (JoseError, ValueError, TypeError):
            raise Unauthorized("invalid token") from None
        # The leeway absorbs clock skew on `nbf` and `iat` only: a token is expired at its `exp`.
        if claims["exp"] <= time.time():
            raise Unauthorized("token expired")
        if not isinstance(claims["sub"], str) or not 1 <= len(claims["sub"]) <= 255:
            raise Unauthorized("invalid token")
        return claims
