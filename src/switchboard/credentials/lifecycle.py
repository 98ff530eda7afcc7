"""Builds the keyring and the CredentialStore at start (`app.state.credentials`); flushes it at stop."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard.credentials.store import CredentialStore
from switchboard.credentials.unoffered import warn_unoffered
from switchboard.kit.crypto import Keyring
from switchboard.settings import Settings


def keyring_from(settings: Settings) -> Keyring:
    return Keyring([(key.kid, key.raw()) for key in settings.encryption_keys])


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    store = CredentialStore(
        app.state.sessionmaker,
        keyring_from(settings),
        settings.config.deployment_credentials,
        allow_private=settings.allow_private_upstreams,
    )
    await store.start()
    app.state.credentials = store
    await warn_unoffered(app.state.sessionmaker)


async def shutdown(app: FastAPI) -> None:
    store: CredentialStore | None = getattr(app.state, "credentials", None)
    if store is not None:
        await store.aclose()
