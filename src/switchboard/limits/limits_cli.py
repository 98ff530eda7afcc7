"""`switchboard limits list|set|status`: limits straight from the database, as an operator sees them.

Running gateways pick a change up within their registry's refresh (a few seconds); nothing to restart.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from switchboard.auth.users import user_id_by_email
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.errors import NotFound, SwitchboardError, ValidationFailed
from switchboard.kit.amounts import MAX_AMOUNT, parse_amount
from switchboard.limits import store
from switchboard.limits.authority import OPERATOR
from switchboard.limits.ledger import status_of
from switchboard.limits.models import LimitRow
from switchboard.limits.service import refuse_foreign
from switchboard.limits.store import LimitKey
from switchboard.limits.subjects import economy_named, require_subject, subject_form
from switchboard.settings import load_settings

PAGE = 500


def describe(row: LimitRow) -> str:
    narrowed = f" in economy {row.economy_id}" if row.economy_id is not None else ""
    unpriced = ", unpriced models allowed" if row.allow_unpriced else ""
    return (
        f"{row.id}  {row.subject_type} {row.subject_id}{narrowed}: {row.metric}/{row.window} {row.amount}"
        f" ({row.managed_by}{unpriced})"
    )


async def _subject(session: AsyncSession, subject_type: str, subject_id: str) -> str:
    """The stored form of a subject named on the command line: economies by slug, users by email too."""
    if subject_type == "user" and "@" in subject_id:
        found = await user_id_by_email(session, subject_id)
        if found is None:
            raise NotFound(f"no user with email {subject_id!r}")
        return str(found)
    subject = subject_form(subject_type, subject_id)
    if subject_type == "economy":
        return str((await economy_named(session, subject)).id)
    return subject


async def _list(engine: AsyncEngine, args: argparse.Namespace) -> int:
    if (args.subject_type is None) != (args.subject_id is None):
        raise ValidationFailed("--subject-type and --subject-id go together")
    async with make_sessionmaker(engine)() as session:
        subject_id = await _subject(session, args.subject_type, args.subject_id) if args.subject_id else None
        where = store.Filter(args.subject_type, subject_id)
        after: tuple[datetime, uuid.UUID] | None = None
        shown = 0
        while True:
            rows = await store.page(session, where, after, PAGE)
            for row in rows:
                print(describe(row))
            shown += len(rows)
            if len(rows) < PAGE:
                break
            after = (rows[-1].created_at, rows[-1].id)
    print(f"switchboard: {shown} limit{'s' if shown != 1 else ''}", file=sys.stderr)
    return 0


async def _set(engine: AsyncEngine, args: argparse.Namespace) -> int:
    amount = parse_amount(args.amount)
    if amount is None:
        raise ValidationFailed(f"--amount is a whole number from 0 to {MAX_AMOUNT}")
    async with make_sessionmaker(engine)() as session, session.begin():
        subject_id = await _subject(session, args.subject_type, args.subject_id)
        economy_id = (await economy_named(session, args.economy)).id if args.economy else None
        if args.subject_type == "economy" and economy_id is not None:
            raise ValidationFailed("--economy narrows a user, room, agent or api_key limit, not an economy's")
        await require_subject(session, args.subject_type, subject_id)
        key = LimitKey(args.subject_type, subject_id, economy_id, args.metric, args.window)
        row = await store.same_key(session, key)
        if row is None:
            new = store.new_row(key, amount, allow_unpriced=args.allow_unpriced, authority=OPERATOR)
            row = await store.add(session, new)
            verb = "created"
        else:
            refuse_foreign(row)
            row = await store.change(
                session, row, amount=amount, allow_unpriced=args.allow_unpriced, authority=OPERATOR
            )
            verb = "updated"
    print(describe(row))
    print(f"switchboard: {verb} limit {row.id}", file=sys.stderr)
    return 0


async def _status(engine: AsyncEngine, args: argparse.Namespace) -> int:
    try:
        limit_id = uuid.UUID(args.limit_id)
    except ValueError:
        raise ValidationFailed(f"{args.limit_id!r} is not a limit id (a UUID)") from None
    async with make_sessionmaker(engine)() as session:
        row = await store.get(session, limit_id)
    if row is None:
        raise NotFound(f"no limit {limit_id}")
    status = await status_of(engine, store.to_limit(row))
    print(describe(row))
    print(f"used:      {status.used}")
    print(f"reserved:  {status.reserved}")
    print(f"remaining: {status.remaining}")
    print(f"resets at: {status.resets_at.isoformat() if status.resets_at else 'never'}")
    return 0


VERBS: dict[str, Callable[[AsyncEngine, argparse.Namespace], Awaitable[int]]] = {
    "list": _list,
    "set": _set,
    "status": _status,
}


async def _run(database_url: str, args: argparse.Namespace) -> int:
    engine = make_engine(database_url)
    try:
        await upgrade(engine)
        return await VERBS[args.limits_command](engine, args)
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    try:
        return asyncio.run(_run(settings.database_url, args))
    except SwitchboardError as error:
        print(f"switchboard limits {args.limits_command}: {error.message}", file=sys.stderr)
        return 2
