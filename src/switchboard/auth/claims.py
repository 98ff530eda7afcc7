"""The caller's claims as `GET /protected/jwt` shows them, for a JWT and an API key alike."""

from __future__ import annotations

from switchboard.auth.principal import Principal
from switchboard.auth.schemas import CallerClaims


def _int_claim(claims: dict[str, object], name: str) -> int | None:
    value = claims.get(name)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def caller_claims(principal: Principal) -> CallerClaims:
    claims = dict(principal.claims)
    wallet = claims.get("default_wallet_id")
    address = claims.get("account_address")
    return CallerClaims(
        user_id=principal.user_id,
        email=principal.email,
        role=principal.role,
        permissions=sorted(principal.permissions),
        auth_method=principal.auth_method,
        session_id=principal.session_id,
        acting_as=principal.acting_as,
        delegation_scope=sorted(principal.delegation_scope) if principal.is_delegated else None,
        delegation_token_id=principal.delegation_token_id,
        api_key_id=principal.api_key_id,
        default_wallet_id=wallet if isinstance(wallet, str) else None,
        account_address=address if isinstance(address, str) else None,
        iat=_int_claim(claims, "iat"),
        exp=_int_claim(claims, "exp"),
    )
