"""Migrations at start: one process migrates however many start together; the usual start skips Alembic."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text

from switchboard.db import migrate
from switchboard.db.engine import make_engine
from switchboard.db.migrate import MigrationError, alembic_config, head_revision, upgrade
from tests.support.databases import DatabaseFactory, alembic_versions


def _write(directory: Path, name: str, body: str) -> None:
    (directory / name).write_text(f'"""A migration."""\n\n{body}\n\n\ndef upgrade() -> None:\n    pass\n')


def test_the_head_read_from_the_files_is_alembics_head() -> None:
    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_the_head_is_read_from_a_branched_chain_and_its_merge(tmp_path: Path) -> None:
    branched, merged = tmp_path / "branched", tmp_path / "merged"
    for directory in (branched, merged):
        directory.mkdir()
        (directory / "__init__.py").write_text("")
        _write(directory, "a.py", 'revision = "a"\ndown_revision = None')
        _write(directory, "b.py", 'revision: str = "b"\ndown_revision: str | None = "a"  # annotated')
        _write(directory, "c.py", 'revision = "c"\ndown_revision = "a"')
    _write(merged, "d.py", 'revision = "d"\ndown_revision = ("b", "c")')
    assert head_revision(branched) is None  # two heads: b and c
    assert head_revision(merged) == "d"


@pytest.mark.parametrize(
    "body",
    [
        "revision = REVISION\ndown_revision = None",  # not a literal
        'down_revision = "a"',  # no revision
        'revision = "x"\nrevision = "y"\ndown_revision = "a"',  # said twice
        'revision = "x"\ndown_revision = 5',
    ],
)
def test_a_file_not_read_plainly_leaves_the_head_to_alembic(tmp_path: Path, body: str) -> None:
    _write(tmp_path, "a.py", 'revision = "a"\ndown_revision = None')
    _write(tmp_path, "b.py", body)
    assert head_revision(tmp_path) is None


async def test_processes_starting_together_migrate_exactly_once(
    databases: DatabaseFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = await databases.create()
    runs: list[int] = []
    run_alembic = migrate._run_alembic

    def counted(connection: object) -> None:
        runs.append(1)
        run_alembic(connection)  # type: ignore[arg-type]

    monkeypatch.setattr(migrate, "_run_alembic", counted)
    # One engine per "process": each has its own connections, lock file handle or advisory lock session.
    engines = [make_engine(url) for _ in range(4)]
    try:
        await asyncio.gather(*(upgrade(engine) for engine in engines))
        await upgrade(engines[0])
    finally:
        for engine in engines:
            await engine.dispose()
    assert len(runs) == 1
    assert await alembic_versions(url) == [head_revision()]


async def test_a_failed_migration_says_which_and_why(databases: DatabaseFactory) -> None:
    url = await databases.create()
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:  # a table the first migration creates, in its way
            await conn.execute(text("CREATE TABLE idempotency_keys (id INTEGER PRIMARY KEY)"))
        with pytest.raises(MigrationError) as failed:
            await upgrade(engine)
    finally:
        await engine.dispose()
    message = str(failed.value)
    assert message.startswith(f"migrating the database to revision {head_revision()} failed: ")
    assert "idempotency_keys" in message


async def test_a_start_on_a_migrated_database_never_imports_alembic(databases: DatabaseFactory) -> None:
    url = await databases.create()
    engine = make_engine(url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()
    script = (
        "import asyncio, sys\n"
        "from switchboard.db.engine import make_engine\n"
        "from switchboard.db.migrate import upgrade\n"
        "async def main():\n"
        f"    engine = make_engine({url!r})\n"
        "    await upgrade(engine)\n"
        "    await engine.dispose()\n"
        "asyncio.run(main())\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'alembic'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
