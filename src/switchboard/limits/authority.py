"""Whose word a limit is (issue 31): the authority level that set it, and who may change it.

A limit remembers the level of whoever set it last: a room's or economy's `owner`, an `admin`, a
`superadmin`, or the `operator` (the config file, the `switchboard limits` command). Only that level or
above may change or delete it, so a cap an Admin put on a room binds the room's owners too, while
owners still manage the limits they set themselves.
"""

from __future__ import annotations

from typing import Literal

from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden
from switchboard.limits.models import LimitRow

Authority = Literal["owner", "admin", "superadmin", "operator"]
LEVELS: tuple[Authority, ...] = ("owner", "admin", "superadmin", "operator")
OPERATOR: Authority = "operator"
_RANK: dict[str, int] = {level: rank for rank, level in enumerate(LEVELS)}
_NAMES: dict[str, str] = {
    "owner": "an owner",
    "admin": "an Admin",
    "superadmin": "a SuperAdmin",
    "operator": "the operator",
}


def level_of(principal: Principal) -> Authority:
    """A caller's level; everyone who is not an Admin manages limits as an owner (access.py)."""
    if principal.role == "SuperAdmin":
        return "superadmin"
    if principal.role == "Admin":
        return "admin"
    return "owner"


def require_authority(principal: Principal, row: LimitRow) -> Authority:
    """The caller's level, if it is at least the limit's; else 403 saying whose limit it is."""
    level = level_of(principal)
    if _RANK[level] < _RANK.get(row.authority, len(LEVELS)):  # an unknown level: none may
        raise Forbidden(
            f"limit {row.id} was set by {_NAMES.get(row.authority, row.authority)}; "
            "only that authority or above may change or delete it"
        )
    return level
