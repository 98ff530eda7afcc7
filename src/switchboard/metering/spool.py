"""A local, fsync'd file of usage records that could not reach the database, replayed once it returns.

A call the provider already answered has been paid for: while the database is unreachable its record
is appended here (one JSON line per record, fsync'd before the caller's answer goes out) instead of
being dropped. Replaying is idempotent: a record keeps its id, and the insert skips ids it has.
Each process writes its own file and holds an exclusive lock on it; at start a process adopts the
files no live process holds (a worker killed mid-outage), so no record waits for its writer's return.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import orjson

from switchboard.metering.outcome import CallOutcome

_UUID_FIELDS = ("economy_id", "user_id", "room_id", "credential_id", "api_key_id")


def encode(record_id: uuid.UUID, outcome: CallOutcome) -> bytes:
    # default=str: ids read back from the database may be asyncpg's own UUID type.
    return orjson.dumps({"record_id": record_id, **dataclasses.asdict(outcome)}, default=str) + b"\n"


def decode(line: bytes) -> tuple[uuid.UUID, CallOutcome]:
    data: dict[str, Any] = orjson.loads(line)
    return uuid.UUID(data.pop("record_id")), outcome_from_json(data)


def outcome_from_json(data: dict[str, Any]) -> CallOutcome:
    data = dict(data)
    for name in _UUID_FIELDS:
        if data.get(name) is not None:
            data[name] = uuid.UUID(data[name])
    data["occurred_at"] = datetime.fromisoformat(data["occurred_at"])
    known = {field.name for field in dataclasses.fields(CallOutcome)}
    return CallOutcome(**{name: value for name, value in data.items() if name in known})


class UsageSpool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / f"usage-spool-{os.getpid()}.ndjson"
        self._file: IO[bytes] | None = None

    @property
    def pending(self) -> bool:
        return self._file is not None and self.path.exists() and self.path.stat().st_size > 0

    def append(self, records: list[tuple[uuid.UUID, CallOutcome]]) -> None:
        """Durable when it returns (fsync'd); raises OSError when the disk refuses."""
        if self._file is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("ab")
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._file.write(b"".join(encode(record_id, outcome) for record_id, outcome in records))
        self._file.flush()
        os.fsync(self._file.fileno())

    def own_records(self) -> list[tuple[uuid.UUID, CallOutcome]]:
        return list(_read(self.path)) if self.path.exists() else []

    def clear(self) -> None:
        """After every spooled record was committed."""
        if self._file is not None:
            self._file.truncate(0)
            self._file.seek(0)

    def orphans(self) -> Iterator[tuple[Path, IO[bytes]]]:
        """Spool files no live process holds, each locked for the caller (who replays and removes it)."""
        for path in sorted(self.directory.glob("usage-spool-*.ndjson")):
            if path == self.path:
                continue
            handle = path.open("rb")
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()  # its writer is alive and will replay it
                continue
            yield path, handle

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                if self._file.tell() == 0:
                    self.path.unlink()
            self._file.close()
            self._file = None


def _read(path: Path) -> Iterator[tuple[uuid.UUID, CallOutcome]]:
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                with contextlib.suppress(ValueError, TypeError, KeyError):  # a torn last line
                    yield decode(line)


def read_file(handle: IO[bytes]) -> list[tuple[uuid.UUID, CallOutcome]]:
    handle.seek(0)
    found = []
    for line in handle:
        if line.strip():
            with contextlib.suppress(ValueError, TypeError, KeyError):
                found.append(decode(line))
    return found
