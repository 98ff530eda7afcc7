"""GET /console and /docs (Swagger UI) with their static files; the pages hold no data and need no
sign-in. Both are served under the console's Content-Security-Policy: nothing from another origin."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from switchboard.console.assets import (
    MEDIA_TYPES,
    SECURITY_HEADERS,
    STATIC_DIR,
    SWAGGER_DIR,
    SWAGGER_FILES,
    static_file,
)
from switchboard.errors import NotFound

# Not in the OpenAPI document: these are pages for people, not an API.
router = APIRouter(include_in_schema=False)


def _serve(name: str, directory: Path = STATIC_DIR) -> FileResponse:
    path = static_file(name, directory)
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


@router.get("/docs")
async def api_docs_page() -> FileResponse:
    return _serve("docs.html", SWAGGER_DIR)


@router.get("/docs/{name}")
async def api_docs_static(name: str) -> FileResponse:
    if name not in SWAGGER_FILES:
        raise NotFound("no such file")
    return _serve(name, SWAGGER_DIR)
