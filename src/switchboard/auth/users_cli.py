"""`switchboard user create --email E --role R`: a password account; the password comes on stdin."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys

from switchboard.auth.hashing import Passwords
from switchboard.auth.users import create_user
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.errors import SwitchboardError
from switchboard.settings import load_settings


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if getpass.getpass("again: ") != first:
            raise SwitchboardError("the two passwords differ")
        return first
    # One line, as `echo … |` or a file gives it; only the line break is dropped.
    return sys.stdin.readline().rstrip("\r\n")


async def _create(database_url: str, email: str, role: str, password: str) -> str:
    engine = make_engine(database_url)
    try:
        await upgrade(engine)
        async with make_sessionmaker(engine)() as session, session.begin():
            user = await create_user(session, Passwords(), email=email, role=role, password=password)
            return f"{user.id} {user.email} {user.role}"
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    try:
        password = _read_password()
        print(asyncio.run(_create(settings.database_url, args.email, args.role, password)))
    except SwitchboardError as error:
        print(f"switchboard: {error.message}", file=sys.stderr)
        return 1
    return 0
