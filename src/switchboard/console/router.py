"""GET /console and its static files; the page itself holds no data and needs no sign-in."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from switchboard.console.assets import MEDIA_TYPES, SECURITY_HEADERS, static_file
from switchboard.errors import NotFound

# Not in the OpenAPI document: these are pages for people, not an API.
router = APIRouter(include_in_schema=False)


def _serve(name: str) -> FileResponse:
    path = static_file(name)
    if path is None:
        raise NotFound("no such console file")
    return FileResponse(path, media_type=MEDIA_TYPES[path.suffix], headers=SECURITY_HEADERS)


@router.get("/")
async def root() -> RedirectResponse:
    # A person who opens the gateway's address finds the console. Relative, so that it stays right
    # behind a proxy that terminates TLS or serves the gateway under another host name.
    return RedirectResponse("/console", status_code=307)


@router.get("/console")
async def console_page() -> FileResponse:
    return _serve("index.html")


@router.get("/console/static/{name}")
async def console_static(name: str) -> FileResponse:
    return _serve(name)
