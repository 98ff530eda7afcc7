"""The OIDC settings (SWITCHBOARD_OIDC_*): which issuer, which client, and how its claims become a role."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import SecretStr

from switchboard.auth.principal import ROLES

DEFAULT_ROLE = "User"
# Most privileged first: a person in several mapped groups gets the highest of their roles.
_RANK: dict[str, int] = {role: rank for rank, role in enumerate(ROLES)}


class OidcConfigError(ValueError):
    """A SWITCHBOARD_OIDC_* value the gateway cannot start with."""


@dataclass(frozen=True)
class OidcSettings:
    issuer: str
    client_id: str
    # Set for a confidential client (sent with HTTP Basic at the token endpoint); None: public client.
    client_secret: SecretStr | None = None
    role_claim: str = "groups"
    role_map: Mapping[str, str] = field(default_factory=dict)
    scopes: str = "openid email profile"

    def role_of(self, claims: Mapping[str, object]) -> str:
        """The mapped role for the claim's value (a string or an array of strings); else User."""
        value = claim_value(claims, self.role_claim)
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        roles = [self.role_map[name] for name in names if isinstance(name, str) and name in self.role_map]
        return min(roles, key=_RANK.__getitem__) if roles else DEFAULT_ROLE


def claim_value(claims: Mapping[str, object], name: str) -> object:
    """`name` as a claim, or as a dotted path into nested objects (Keycloak's `realm_access.roles`)."""
    if name in claims:
        return claims[name]
    value: object = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def parse_role_map(text: str) -> dict[str, str]:
    try:
        parsed = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        raise OidcConfigError('ROLE_MAP is a JSON object, e.g. {"switchboard-admins": "Admin"}') from None
    if not isinstance(parsed, dict) or not all(isinstance(k, str) for k in parsed):
        raise OidcConfigError('ROLE_MAP is a JSON object, e.g. {"switchboard-admins": "Admin"}')
    for claim, role in parsed.items():
        if role not in ROLES:
            raise OidcConfigError(f"ROLE_MAP maps {claim!r} to {role!r}, not one of {', '.join(ROLES)}")
    return dict(parsed)


def from_env(get: Callable[[str], str | None]) -> OidcSettings | None:
    """`get(NAME)` reads SWITCHBOARD_NAME; None when no issuer is configured (SSO off)."""
    issuer = (get("OIDC_ISSUER") or "").strip()
    if not issuer:
        return None
    if not issuer.startswith(("https://", "http://")) or any(c.isspace() for c in issuer):
        raise OidcConfigError("ISSUER is the issuer's URL, e.g. https://login.example.com/")
    client_id = (get("OIDC_CLIENT_ID") or "").strip()
    if not client_id:
        raise OidcConfigError("CLIENT_ID must be set with ISSUER")
    secret = get("OIDC_CLIENT_SECRET")
    scopes = (get("OIDC_SCOPES") or "openid email profile").strip()
    if "openid" not in scopes.split():
        raise OidcConfigError("SCOPES must include openid")
    return OidcSettings(
        # Compared byte for byte with `iss` (OIDC Discovery §4.3): kept as given, trailing slash too.
        issuer=issuer,
        client_id=client_id,
        client_secret=SecretStr(secret) if secret else None,
        role_claim=(get("OIDC_ROLE_CLAIM") or "groups").strip(),
        role_map=parse_role_map(get("OIDC_ROLE_MAP") or ""),
        scopes=scopes,
    )
