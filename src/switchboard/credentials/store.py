"""CredentialStore: which keys a caller may spend, the single decrypt path, and last-used bookkeeping."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
import uuid
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.auth.principal import Principal
from switchboard.config_file import DeploymentCredentialEntry
from switchboard.credentials.binding import associated_data
from switchboard.credentials.models import LlmCredential
from switchboard.errors import ServiceUnavailable, SwitchboardError
from switchboard.groups import service as groups
from switchboard.kit.clock import utcnow
from switchboard.kit.crypto import CryptoError, Keyring
from switchboard.kit.secret import Secret

log = logging.getLogger("switchboard.credentials")

CredentialScope = Literal["user", "room", "deployment"]
# Strictly under the promised second, so that the query time of a refill fits in the promise.
CACHE_SECONDS = 0.9
CACHE_MAX_ENTRIES = 10_000
TOUCH_FLUSH_SECONDS = 1.0


@dataclass(frozen=True)
class CredentialRef:
    """A credential the caller may spend: everything decrypting needs, never the plain secret."""

    id: uuid.UUID | None
    scope: CredentialScope
    provider: str
    base_url: str | None
    owner_id: uuid.UUID | None = None
    sealed: bytes = field(default=b"", repr=False)
    api_key_env: str | None = None


def _ref(row: LlmCredential) -> CredentialRef:
    return CredentialRef(
        id=row.id,
        scope=row.scope,  # type: ignore[arg-type]
        provider=row.provider,
        base_url=row.base_url,
        owner_id=row.owner_id,
        sealed=row.sealed_secret,
    )


def _read_env(name: str) -> str | None:
    # The one environment read outside settings.py, on purpose: SPEC §6 has deployment keys read
    # when a call needs them, so that an operator can change or remove one without a restart.
    return os.environ.get(name) or None


class _Noted:
    """What `touch` returns: already done, so `store.touch(ref)` and `await store.touch(ref)` both work."""

    __slots__ = ()

    def __await__(self) -> Generator[None, None, None]:
        return
        yield


_NOTED = _Noted()


# What a look-up finds: the room's credentials (None: the caller is not in the room) and their own.
_Loaded = tuple[list[CredentialRef] | None, list[CredentialRef]]


class CredentialStore:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        keyring: Keyring,
        deployment: Sequence[DeploymentCredentialEntry] = (),
        *,
        allow_private: bool = False,
    ) -> None:
        self.keyring = keyring
        self.allow_private = allow_private
        self._sessionmaker = sessionmaker
        self._deployment = tuple(deployment)
        # (user, room) -> (expires at, room refs or None when not a member, own refs)
        self._cache: dict[
            tuple[uuid.UUID, uuid.UUID | None],
            tuple[float, list[CredentialRef] | None, list[CredentialRef]],
        ] = {}
        # The read under way per key: the calls that find the entry missing or expired together
        # share it. Each its own would take a connection each, and a busy caller's calls all
        # expire at once: on SQLite every connection past the pool's five is opened for that one
        # query (its schema parsed again) and closed.
        self._loading: dict[tuple[uuid.UUID, uuid.UUID | None], asyncio.Future[_Loaded]] = {}
        self._generation = 0  # bumped by `invalidate`: a read begun before it is not kept
        self._touched: set[uuid.UUID] = set()
        self._flusher: asyncio.Task[None] | None = None

    async def in_reach(
        self, principal: Principal, room_id: uuid.UUID | None = None
    ) -> dict[str, CredentialRef]:
        """Per provider, the credential the caller may spend: the room's, then their own, then the
        deployment's. Raises NotFound when `room_id` names a room the caller is not in."""
        return {provider: refs[0] for provider, refs in (await self.spendable(principal, room_id)).items()}

    async def spendable(
        self, principal: Principal, room_id: uuid.UUID | None = None
    ) -> dict[str, list[CredentialRef]]:
        """Per provider, every credential the caller may spend, in scope order (room's, own,
        deployment's), for routing to pool (SPEC §14)."""
        if principal.is_delegated:
            if room_id is None:
                room_id = principal.acting_as
            elif room_id != principal.acting_as:
                raise groups.room_not_found()
        if not principal.can_write:
            # Viewers and read-scoped delegation tokens do not call models.
            return {}
        room_refs, own_refs = await self._stored(principal.user_id, room_id)
        if room_id is not None and room_refs is None:
            raise groups.room_not_found()
        found: dict[str, list[CredentialRef]] = {}
        for ref in [*(room_refs or ()), *own_refs, *self._deployment_refs()]:
            pool = found.get(ref.provider)
            if pool is None:
                found[ref.provider] = [ref]
            else:
                pool.append(ref)
        return found

    @staticmethod
    def version(ref: CredentialRef) -> bytes:
        """What changes when the credential's secret does: a rejected key is tried again after that."""
        if ref.scope == "deployment":
            return hashlib.blake2b((_read_env(ref.api_key_env or "") or "").encode(), digest_size=16).digest()
        return ref.sealed

    def invalidate(self) -> None:
        """Forget cached look-ups (after a change on this replica; other replicas expire theirs)."""
        self._cache.clear()
        self._loading.clear()
        self._generation += 1

    async def reveal(self, ref: CredentialRef) -> Secret:
        """The single decrypt path: call it only where the key goes into a provider request."""
        if ref.scope == "deployment":
            value = _read_env(ref.api_key_env or "")
            if value is None:
                raise ServiceUnavailable(f"the deployment credential for {ref.provider} is not configured")
            return Secret(value)
        if ref.id is None or ref.owner_id is None:
            raise SwitchboardError("a stored credential reference is incomplete")
        try:
            plain = self.keyring.open(
                ref.sealed, associated_data(ref.id, ref.scope, ref.owner_id, ref.provider)
            )
        except CryptoError as exc:
            log.error("credential %s cannot be decrypted: %s", ref.id, exc)
            raise SwitchboardError(
                "a stored credential cannot be decrypted; the operator must check SWITCHBOARD_ENCRYPTION_KEYS"
            ) from None
        return Secret(plain.decode("utf-8"))

    def touch(self, ref: CredentialRef) -> _Noted:
        """Note the credential as used; written in the background, never on a response's path."""
        if ref.id is not None:
            self._touched.add(ref.id)
        return _NOTED

    async def start(self) -> None:
        self._flusher = asyncio.create_task(self._flush_forever(), name="credentials-last-used")

    async def aclose(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        await self.flush()

    async def flush(self) -> None:
        if not self._touched:
            return
        ids, self._touched = self._touched, set()
        try:
            async with self._sessionmaker() as session, session.begin():
                await session.execute(
                    update(LlmCredential).where(LlmCredential.id.in_(ids)).values(last_used_at=utcnow())
                )
        except (SQLAlchemyError, OSError) as exc:
            # Best effort by contract: a lost last_used_at must never fail or slow a call.
            log.warning("could not record last_used_at of %d credential(s): %s", len(ids), type(exc).__name__)

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(TOUCH_FLUSH_SECONDS)
            await self.flush()

    def _deployment_refs(self) -> list[CredentialRef]:
        return [
            CredentialRef(
                id=None,
                scope="deployment",
                provider=entry.provider,
                base_url=entry.base_url,
                api_key_env=entry.api_key_env,
            )
            for entry in self._deployment
            if _read_env(entry.api_key_env) is not None
        ]

    async def _stored(
        self, user_id: uuid.UUID, room_id: uuid.UUID | None
    ) -> tuple[list[CredentialRef] | None, list[CredentialRef]]:
        key = (user_id, room_id)
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1], hit[2]
        loading = self._loading.get(key)
        if loading is None:
            loading = self._loading[key] = asyncio.ensure_future(self._refill(key, now))
        # Shielded: a caller that goes away does not cancel the read the others wait for.
        return await asyncio.shield(loading)

    async def _refill(self, key: tuple[uuid.UUID, uuid.UUID | None], now: float) -> _Loaded:
        generation = self._generation
        try:
            room_refs, own_refs = await self._load(*key)
        finally:
            if self._loading.get(key) is asyncio.current_task():
                del self._loading[key]
        if generation != self._generation:
            return room_refs, own_refs  # read before a change here: answers its callers, not kept
        if len(self._cache) >= CACHE_MAX_ENTRIES:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            if len(self._cache) >= CACHE_MAX_ENTRIES:
                self._cache.clear()
        # Expiry counts from before the query, so no answer outlives the promise.
        self._cache[key] = (now + CACHE_SECONDS, room_refs, own_refs)
        return room_refs, own_refs

    async def _load(
        self, user_id: uuid.UUID, room_id: uuid.UUID | None
    ) -> tuple[list[CredentialRef] | None, list[CredentialRef]]:
        async with self._sessionmaker() as session:
            spend_room = False
            role = None
            if room_id is not None:
                role = await groups.member_role(session, room_id, user_id)
                spend_room = role is not None and role != "viewer"
            mine = and_(LlmCredential.scope == "user", LlmCredential.user_id == user_id)
            reach = (
                or_(mine, and_(LlmCredential.scope == "room", LlmCredential.room_id == room_id))
                if spend_room
                else mine
            )
            # Newest first: when a scope holds several keys of one provider, the latest added wins.
            rows = await session.scalars(
                select(LlmCredential)
                .where(reach)
                .order_by(LlmCredential.created_at.desc(), LlmCredential.id.desc())
            )
            refs = [_ref(row) for row in rows]
        room_refs = [r for r in refs if r.scope == "room"] if role is not None else None
        return room_refs, [r for r in refs if r.scope == "user"]
