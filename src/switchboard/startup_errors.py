"""One clear line for a failure at start-up or in a CLI verb: the setting to change, not a traceback."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from switchboard.config_file import ConfigError
from switchboard.settings import SettingsError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine
    from starlette.routing import Router
    from starlette.types import Message, Receive, Scope, Send

DATABASE = "SWITCHBOARD_DATABASE_URL"
POOL_SIZE = "SWITCHBOARD_DATABASE_POOL_SIZE"
TOO_MANY_CLIENTS = "53300"  # PostgreSQL's too_many_connections: every slot of max_connections is taken
DATABASE_FORMS = "sqlite+aiosqlite:///path/to/file.db or postgresql+asyncpg://user:password@host:5432/name"
CHECK_TIMEOUT_SECONDS = 10.0
DEBUG_HINT = "run again with --debug for the traceback"


class StartupError(Exception):
    """A failure already worded for the operator: printed as is, without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _first_line(exc: BaseException) -> str:
    # SQLAlchemy adds "(Background on this error at: …)" and "[SQL: …]" lines; the first says it all.
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line.removeprefix("(sqlalchemy.dialects.postgresql.asyncpg.Error) ")


def shown_url(url: str) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "a value that is not a URL"


def _async_form(url: str) -> str | None:
    """The same URL with the async driver Switchboard uses, for the usual slips (`sqlite://`, `postgres://`)."""
    scheme, sep, rest = url.strip().partition("://")
    dialect = scheme.split("+", 1)[0].lower()
    if not sep or not rest:
        return None
    if dialect == "sqlite":
        return f"sqlite+aiosqlite://{rest}"
    if dialect in ("postgres", "postgresql"):
        return shown_url(f"postgresql+asyncpg://{rest}")
    return None


_OUT_OF_SLOTS = (
    "refused a connection: every one of its max_connections is taken (too many clients). Each "
    f"Switchboard process opens up to {POOL_SIZE} connections: keep processes x {POOL_SIZE} <= "
    "max_connections - a reserve for migrations and operators, lower it, raise max_connections, or put "
    "PgBouncer in front (docs/postgres-connections.md)"
)


def _out_of_slots(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(4):  # SQLAlchemy wraps the driver's error (`orig`), which wraps asyncpg's
        if seen is None:
            break
        if getattr(seen, "sqlstate", None) == TOO_MANY_CLIENTS or "too many clients" in str(seen):
            return True
        seen = getattr(seen, "orig", None) or seen.__cause__
    return False


def database_problem(exc: BaseException, url: str) -> str:
    """What is wrong with the database setting, for an error raised while opening it."""
    from sqlalchemy.exc import ArgumentError, InvalidRequestError, NoSuchModuleError

    if _out_of_slots(exc):
        return f"{DATABASE}: {shown_url(url)} {_OUT_OF_SLOTS}"
    if isinstance(exc, ArgumentError | NoSuchModuleError | ModuleNotFoundError) or (
        isinstance(exc, InvalidRequestError) and "async driver" in str(exc)
    ):
        fixed = _async_form(url)
        if fixed is not None and fixed != shown_url(url):
            return f"{DATABASE} is not usable ({_first_line(exc)}); did you mean {fixed} ?"
        return f"{DATABASE} is not usable ({_first_line(exc)}); use {DATABASE_FORMS}"
    if isinstance(exc, TimeoutError):
        return f"{DATABASE}: {shown_url(url)} did not answer within {CHECK_TIMEOUT_SECONDS:.0f} s"
    return f"{DATABASE}: cannot open {shown_url(url)}: {_first_line(exc)}"


async def check_database(url: str) -> None:
    """Open the database once and run `SELECT 1`; StartupError naming the setting when that fails."""
    from sqlalchemy import text

    from switchboard.db.engine import make_engine

    try:
        engine = make_engine(url)
    except Exception as exc:
        raise StartupError(database_problem(exc, url)) from exc
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_SECONDS), engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception as exc:
        raise StartupError(database_problem(exc, url)) from exc
    finally:
        await engine.dispose()


def explain(exc: BaseException) -> str:
    """The line to print for any failure; unexpected ones say how to see the traceback."""
    from switchboard.db.migrate import MigrationError

    if isinstance(exc, StartupError):
        return exc.message
    if isinstance(exc, MigrationError):
        return str(exc)
    if isinstance(exc, SettingsError | ConfigError):
        return str(exc)
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename} (check SWITCHBOARD_DATA_DIR and the file's owner)"
    if _out_of_slots(exc):  # met after the start-up check (a worker's first statements)
        return f"the database {_OUT_OF_SLOTS}"
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or exc}: {exc.filename}"
    return f"{type(exc).__name__}: {_first_line(exc)} ({DEBUG_HINT})"


async def open_database(url: str, *, migrate: bool, pool_size: int | None = None) -> AsyncEngine:
    """The app's engine, migrated when asked; a URL or connection problem is a StartupError."""
    from switchboard.db.engine import make_engine
    from switchboard.db.migrate import MigrationError, upgrade

    try:
        engine = make_engine(url, **({"pool_size": pool_size} if pool_size else {}))
    except Exception as exc:
        raise StartupError(database_problem(exc, url)) from exc
    if migrate:
        try:
            await upgrade(engine)
        except MigrationError:
            await engine.dispose()
            raise
        except Exception as exc:
            await engine.dispose()
            raise StartupError(database_problem(exc, url)) from exc
    return engine


def one_line_startup_failures(router: Router) -> None:
    """uvicorn prints the message a failed lifespan sends; Starlette sends a whole traceback.

    Replaces it with `explain`'s line (the traceback stays available with SWITCHBOARD_DEBUG/--debug).
    Set on the router instance, so requests pay nothing for it.
    """
    original = router.lifespan

    async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
        async def one_line(message: Message) -> None:
            failed = sys.exc_info()[1]
            if message["type"] == "lifespan.startup.failed" and failed is not None:
                message = {**message, "message": f"switchboard: cannot start: {explain(failed)}"}
            await send(message)

        await original(scope, receive, one_line)

    router.lifespan = lifespan  # type: ignore[method-assign]
