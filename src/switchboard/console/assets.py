"""The console's shipped files: which names are served, from where, as what."""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
# /docs: Swagger UI from swagger-ui-dist, pinned and shipped with the gateway (swagger/PINNED), never
# a third-party CDN: a token pasted into its "Authorize" box meets only this origin's scripts.
SWAGGER_DIR = Path(__file__).resolve().parent / "swagger"
SWAGGER_FILES = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "docs.js"})

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}

# Everything the page loads comes from this origin; no inline script or style, no frames, no plugins.
# The policy is also the proof that the console reaches no other origin (SPEC §18).
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'none'",
        "form-action 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)

SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    # Revalidated on every load (ETag answers 304): an upgraded gateway never runs an old script.
    "cache-control": "no-cache",
}


def static_file(name: str, directory: Path = STATIC_DIR) -> Path | None:
    """The shipped file called `name`, or None: only plain names of known kinds, never a path."""
    if "/" in name or "\\" in name or name.startswith("."):
        return None
    path = directory / name
    if path.suffix not in MEDIA_TYPES or not path.is_file():
        return None
    return path
