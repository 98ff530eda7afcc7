"""Idempotency-Key claims (SPEC §4): one row per (caller, key), claimed by INSERT, safe across replicas."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

import orjson
from sqlalchemy import Table, bindparam, delete, null, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from switchboard.db.driver_statements import driver_ready
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import LedgerConnection
from switchboard.errors import BadRequest, Conflict, IdempotencyConflict, SwitchboardError
from switchboard.idempotency.models import DONE, IN_FLIGHT, IdempotencyRecord
from switchboard.kit.clock import utcnow

log = logging.getLogger("switchboard.idempotency")

# An in-flight claim is renewed every LEASE/3 while its execution runs; a replica that dies stops
# renewing, and its key can be taken over once the lease has run out.
LEASE_SECONDS = 30.0
MAX_KEY_LENGTH = 255
_T = cast(Table, IdempotencyRecord.__table__)


@dataclass(frozen=True)
class StoredResponse:
    """What a replay sends back: the first execution's status, relevant headers and body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(eq=False)
class Claim:
    """This execution holds the key; finish with `complete` or `release`."""

    scope: str
    key: str
    token: str
    _heartbeat: asyncio.Task[None] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class New:
    claim: Claim


@dataclass(frozen=True)
class Replay:
    stored: StoredResponse


@dataclass(frozen=True)
class BodyMismatch:
    """Same key, other request: 400 IDEMPOTENCY_CONFLICT."""


@dataclass(frozen=True)
class InFlight:
    """Same key and request, first execution still running: 409 CONFLICT."""


BeginResult = New | Replay | BodyMismatch | InFlight


@dataclass(frozen=True)
class TakenOver:
    """Internal: a stale row now carries our claim token."""


# The statements the settlement transaction runs (settlement/transaction.py), built once.
_THIS_CLAIM = (
    (_T.c.scope == bindparam("b_scope"))
    & (_T.c.key == bindparam("b_key"))
    & (_T.c.claim == bindparam("b_token"))
)
_COMPLETE = driver_ready(
    update(_T)
    .where(_THIS_CLAIM)
    .values(
        state=DONE,
        status=bindparam("b_status"),
        headers=bindparam("b_headers", type_=_T.c.headers.type),
        body=bindparam("b_body", type_=_T.c.body.type),
        lease_until=bindparam("b_now", type_=_T.c.lease_until.type),
        expires_at=bindparam("b_expires", type_=_T.c.expires_at.type),
        call=null(),
    )
)
_RELEASE = driver_ready(delete(_T).where(_THIS_CLAIM))
_RELEASE_DEAD = driver_ready(
    delete(_T).where(_THIS_CLAIM, _T.c.state == IN_FLIGHT, _T.c.lease_until <= bindparam("b_now"))
)


def check_key(value: str) -> str:
    """The header's value, or 400 when it is empty, too long or not visible ASCII."""
    if not 1 <= len(value) <= MAX_KEY_LENGTH or not all("!" <= ch <= "~" for ch in value):
        raise BadRequest(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} visible ASCII characters")
    return value


def fingerprint(method: str, path: str, body: bytes, query: str = "") -> str:
    """Hash of what the request asks for; JSON bodies compare by value, not by spacing or key order."""
    try:
        canonical = orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        canonical = body
    digest = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), query.encode(), canonical):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def releases_key(status: int) -> bool:
    """Outcomes worth retrying are released rather than stored, so that the retry executes again."""
    return status >= 500 or status in (408, 429)


def refusal(result: BodyMismatch | InFlight) -> SwitchboardError:
    """The documented error for a key that cannot run now."""
    if isinstance(result, BodyMismatch):
        return IdempotencyConflict()
    return Conflict("a request with this Idempotency-Key is still in progress", headers={"Retry-After": "1"})


def _stored(row: Any) -> StoredResponse:
    headers = tuple((str(name), str(value)) for name, value in (row.headers or []))
    return StoredResponse(status=int(row.status), headers=headers, body=bytes(row.body or b""))


class IdempotencyStore:
    """The claim protocol over `idempotency_keys`; one per app, at `app.state.idempotency`."""

    def __init__(self, engine: AsyncEngine, ttl_seconds: int, lease_seconds: float = LEASE_SECONDS) -> None:
        self._engine = engine
        self._ttl = timedelta(seconds=ttl_seconds)
        self._lease = timedelta(seconds=lease_seconds)
        self._claims: set[Claim] = set()
        self._insert = insert_for(engine.dialect.name)

    async def begin(self, scope: str, key: str, fingerprint: str) -> BeginResult:
        # A few rounds: the row we collided with may be released or taken over between statements.
        for _ in range(5):
            result = await self._try_begin(scope, key, fingerprint)
            if result is not None:
                return result
        return InFlight()

    async def begin_or_raise(self, scope: str, key: str, fingerprint: str) -> New | Replay:
        """`begin`, with the two refusals raised as the documented errors."""
        result = await self.begin(scope, key, fingerprint)
        if isinstance(result, BodyMismatch | InFlight):
            raise refusal(result)
        return result

    async def _try_begin(self, scope: str, key: str, fingerprint: str) -> BeginResult | None:
        now = utcnow()
        token = uuid.uuid4().hex
        fresh = {
            "fingerprint": fingerprint,
            "state": IN_FLIGHT,
            "claim": token,
            "lease_until": now + self._lease,
            "created_at": now,
            "expires_at": now + self._ttl,
            "status": None,
            "headers": None,
            "body": None,
            "call": null(),
        }
        async with self._engine.begin() as conn:
            inserted = await conn.execute(
                self._insert(_T)
                .values(scope=scope, key=key, **fresh)
                .on_conflict_do_nothing(index_elements=["scope", "key"])
            )
            if inserted.rowcount != 1:
                outcome = await self._collided(conn, scope, key, fingerprint, now, fresh)
                if not isinstance(outcome, TakenOver):
                    return outcome
        # Renew the lease only once the claim is committed.
        return New(self._start(scope, key, token))

    async def _collided(
        self,
        conn: AsyncConnection,
        scope: str,
        key: str,
        fingerprint: str,
        now: datetime,
        fresh: dict[str, Any],
    ) -> BeginResult | TakenOver | None:
        """The key exists: refuse, replay, or take it over; None to try again."""
        row = (await conn.execute(select(_T).where(_T.c.scope == scope, _T.c.key == key))).one_or_none()
        if row is None:
            return None  # released in between: insert again
        stale = row.expires_at <= now or (row.state == IN_FLIGHT and row.lease_until <= now)
        if not stale:
            if row.fingerprint != fingerprint:
                return BodyMismatch()
            if row.state == DONE:
                return Replay(_stored(row))
            return InFlight()
        if row.expires_at > now and row.fingerprint != fingerprint:
            return BodyMismatch()
        if row.state == IN_FLIGHT and row.call is not None:
            # A model call whose replica died: recovery writes its `abandoned` record and frees the
            # key (llm/recovery.py), within a second or so; until then the retry is told to wait.
            return InFlight()
        # Expired, or its executor stopped renewing the lease: take it over, but only if nobody
        # else did first (compare-and-set on the old claim token).
        taken = await conn.execute(
            update(_T).where(_T.c.scope == scope, _T.c.key == key, _T.c.claim == row.claim).values(**fresh)
        )
        if taken.rowcount != 1:
            return None
        log.info("idempotency key taken over after its lease ran out")
        return TakenOver()

    async def complete(self, claim: Claim, response: StoredResponse) -> None:
        """Store the outcome so that retries replay it; a no-op if the claim was lost meanwhile."""
        await self._stop(claim)
        now = utcnow()
        async with self._engine.begin() as conn:
            result = await conn.execute(
                update(_T)
                .where(_T.c.scope == claim.scope, _T.c.key == claim.key, _T.c.claim == claim.token)
                .values(
                    state=DONE,
                    status=response.status,
                    headers=[list(pair) for pair in response.headers],
                    body=response.body,
                    lease_until=now,
                    expires_at=now + self._ttl,
                )
            )
        if result.rowcount != 1:
            log.warning("idempotency claim was lost before completion; the outcome is not stored")

    async def complete_in(self, conn: LedgerConnection, claim: Claim, response: StoredResponse) -> None:
        """`complete` inside the caller's transaction (the usage writer's, SPEC §13)."""
        now = utcnow()
        result = await conn.execute(
            _COMPLETE,
            {
                "b_scope": claim.scope,
                "b_key": claim.key,
                "b_token": claim.token,
                "b_status": response.status,
                "b_headers": [list(pair) for pair in response.headers],
                "b_body": response.body,
                "b_now": now,
                "b_expires": now + self._ttl,
            },
        )
        if result.rowcount != 1:
            log.warning("idempotency claim was lost before completion; the outcome is not stored")

    async def release_in(self, conn: LedgerConnection, claim: Claim) -> None:
        await conn.execute(_RELEASE, {"b_scope": claim.scope, "b_key": claim.key, "b_token": claim.token})

    async def release_dead_in(self, conn: LedgerConnection, claim: Claim, now: datetime) -> bool:
        """Frees a dead execution's key; False when it finished or renewed its lease meanwhile."""
        result = await conn.execute(
            _RELEASE_DEAD, {"b_scope": claim.scope, "b_key": claim.key, "b_token": claim.token, "b_now": now}
        )
        return bool(result.rowcount)

    async def attach(self, claim: Claim, call: object) -> None:
        """Keeps the model call a claim runs, for the record recovery writes should it never finish."""
        async with self._engine.begin() as conn:
            await conn.execute(
                update(_T)
                .where(_T.c.scope == claim.scope, _T.c.key == claim.key, _T.c.claim == claim.token)
                .values(call=call)
            )

    @staticmethod
    async def dead_calls(
        conn: AsyncConnection, now: datetime, batch: int = 100
    ) -> list[tuple[Claim, dict[str, Any]]]:
        """Model calls whose executor stopped renewing the lease: their replica died."""
        rows = await conn.execute(
            select(_T.c.scope, _T.c.key, _T.c.claim, _T.c.call)
            .where(_T.c.state == IN_FLIGHT, _T.c.lease_until <= now, _T.c.call.is_not(None))
            .limit(batch)
        )
        return [(Claim(scope=r.scope, key=r.key, token=r.claim), r.call) for r in rows if r.call is not None]

    async def forget(self, claim: Claim) -> None:
        """The claim was settled elsewhere (the usage writer's transaction): stop renewing it."""
        await self._stop(claim)

    async def release(self, claim: Claim) -> None:
        """Forget the key (a failed attempt), so that a retry executes again."""
        await self._stop(claim)
        async with self._engine.begin() as conn:
            await conn.execute(
                delete(_T).where(_T.c.scope == claim.scope, _T.c.key == claim.key, _T.c.claim == claim.token)
            )

    async def purge_expired(self) -> int:
        async with self._engine.begin() as conn:
            result = await conn.execute(delete(_T).where(_T.c.expires_at <= utcnow()))
        return int(result.rowcount or 0)

    async def close(self) -> None:
        for claim in list(self._claims):
            await self._stop(claim)

    def _start(self, scope: str, key: str, token: str) -> Claim:
        claim = Claim(scope=scope, key=key, token=token)
        claim._heartbeat = asyncio.create_task(self._renew(claim), name="idempotency-lease")
        self._claims.add(claim)
        return claim

    async def _stop(self, claim: Claim) -> None:
        self._claims.discard(claim)
        task, claim._heartbeat = claim._heartbeat, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _renew(self, claim: Claim) -> None:
        interval = self._lease.total_seconds() / 3
        while True:
            await asyncio.sleep(interval)
            try:
                async with self._engine.begin() as conn:
                    result = await conn.execute(
                        update(_T)
                        .where(
                            _T.c.scope == claim.scope,
                            _T.c.key == claim.key,
                            _T.c.claim == claim.token,
                            _T.c.state == IN_FLIGHT,
                        )
                        .values(lease_until=utcnow() + self._lease)
                    )
            except Exception:
                log.warning("could not renew an idempotency lease; retrying", exc_info=True)
                continue
            if result.rowcount != 1:
                return
