"""One way to serve a call: a model, a credential for its provider, and the model's routing settings."""

from __future__ import annotations

import uuid
from collections.abc import Hashable
from typing import NamedTuple

from switchboard.catalog.routing_settings import RoutingSettings
from switchboard.config_file import ModelEntry
from switchboard.credentials.store import CredentialRef

# The credentials of one provider in one scope: (provider, scope, room or user id; None for deployment).
PoolKey = tuple[str, str, uuid.UUID | None]


class Route(NamedTuple):
    """A tuple, not a dataclass: an ordinary call builds one."""

    model: ModelEntry
    credential: CredentialRef
    settings: RoutingSettings
    # Set when the credential shares its scope with others of its provider: then it is balanced
    # against them, and its calls in flight are counted.
    pool: PoolKey | None = None


def credential_key(ref: CredentialRef) -> Hashable:
    """A credential's identity across calls (deployment credentials have no id: their env var has)."""
    return ref.id if ref.id is not None else (ref.provider, ref.api_key_env, ref.base_url)
