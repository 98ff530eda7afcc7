"""The `limit` and `cursor` query parameters of list routes (SPEC §4).

Apart from switchboard.kit.pagination, which services and CLI commands use too: these are FastAPI's,
and importing FastAPI costs a process that serves nothing (a CLI verb) a tenth of a second.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from switchboard.kit.pagination import MAX_LIMIT

Limit = Annotated[int, Query(description=f"page size, 1 to {MAX_LIMIT}")]
Cursor = Annotated[str | None, Query(description="opaque cursor from the previous page")]
