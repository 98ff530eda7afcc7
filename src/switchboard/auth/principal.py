"""Who is calling: the verified identity every service function receives."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["SuperAdmin", "Admin", "Manager", "Operator", "User", "Viewer", "ApiClient"]
ROLES: tuple[Role, ...] = ("SuperAdmin", "Admin", "Manager", "Operator", "User", "Viewer", "ApiClient")
DelegationScope = Literal["read", "write", "manage"]
SCOPE_ORDER: dict[str, int] = {"read": 1, "write": 2, "manage": 3}

ROLE_DEFAULT_PERMISSIONS: dict[str, tuple[str, ...]] = {
    "SuperAdmin": (
        "CryptoOperations",
        "ViewSignatureKeys",
        "ManageSignatureKeys",
        "CreateGroup",
        "CreateDelegationToken",
        "ReadUsage",
    ),
    "Admin": ("CryptoOperations", "CreateGroup", "CreateDelegationToken", "ReadUsage"),
    "Manager": ("CryptoOperations", "CreateGroup", "CreateDelegationToken"),
    "Operator": ("CryptoOperations", "CreateGroup"),
    "User": ("CreateGroup",),
    "Viewer": (),
    "ApiClient": (),
}


@dataclass(frozen=True)
class Principal:
    user_id: uuid.UUID
    role: str = "User"
    permissions: frozenset[str] = field(default_factory=frozenset)
    email: str | None = None
    session_id: str | None = None
    auth_method: str = "jwt"
    acting_as: uuid.UUID | None = None
    delegation_scope: frozenset[str] = field(default_factory=frozenset)
    delegation_token_id: str | None = None
    api_key_id: uuid.UUID | None = None
    claims: tuple[tuple[str, object], ...] = ()

    @property
    def is_admin(self) -> bool:
        return self.role in ("Admin", "SuperAdmin")

    @property
    def is_viewer(self) -> bool:
        return self.role == "Viewer"

    @property
    def is_delegated(self) -> bool:
        return self.auth_method == "delegation"

    def has_permission(self, name: str) -> bool:
        return self.role == "SuperAdmin" or name in self.permissions

    def delegation_allows(self, needed: DelegationScope) -> bool:
        """A non-delegated caller is unrestricted here; a delegated one needs the scope."""
        if not self.is_delegated:
            return True
        held = max((SCOPE_ORDER.get(s, 0) for s in self.delegation_scope), default=0)
        return held >= SCOPE_ORDER[needed]

    @property
    def can_write(self) -> bool:
        """May call models and change their own things (SPEC §2)."""
        return not self.is_viewer and self.delegation_allows("write")
