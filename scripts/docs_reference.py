"""MkDocs hooks: the CLI and HTTP API reference pages, generated from the code at every build.

The CLI page's `<!-- cli-help -->` marker becomes the real `switchboard … --help` of every command;
`reference/api.md` is rendered from the OpenAPI document `create_app(...)` serves, and the document
itself is published beside it as `reference/openapi.json`. Nothing is written into the checkout, so
the pages cannot drift from the code. `CHANGELOG.md` (at the repository root) becomes `changelog.md`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- cli-help -->"
METHODS = ("get", "post", "put", "patch", "delete")


# --- MkDocs hooks ---------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    spec = openapi_document()
    generated = {
        "reference/api.md": api_reference(spec),
        "reference/openapi.json": json.dumps(spec, indent=2) + "\n",
        "changelog.md": (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"),
    }
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if CLI_MARKER in markdown:
        return markdown.replace(CLI_MARKER, cli_reference())
    return markdown


# --- CLI ------------------------------------------------------------------------------------------


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def cli_reference() -> str:
    from switchboard.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal's width: make the page reproducible
    try:
        sections = []
        for parser in _parsers(build_parser()):
            sections.append(f"### `{parser.prog}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(sections)


# --- HTTP API -------------------------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    """What `GET /openapi.json` answers, from an app built on throwaway settings (nothing is started)."""
    from switchboard.app import create_app
    from switchboard.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="switchboard-docs-") as data_dir:
        settings = load_settings(
            {
                "SWITCHBOARD_DATA_DIR": data_dir,
                "SWITCHBOARD_DATABASE_URL": f"sqlite+aiosqlite:///{data_dir}/docs.db",
                "SWITCHBOARD_CONFIG": str(ROOT / "config" / "switchboard.yaml"),
                # Given rather than generated: the build should not log development-secret warnings.
                "SWITCHBOARD_JWT_SECRET": secrets.token_urlsafe(48),
                "SWITCHBOARD_ENCRYPTION_KEYS": "docs:" + base64.b64encode(secrets.token_bytes(32)).decode(),
                "SWITCHBOARD_GIT_SHA": "docs",
            }
        )
        spec: dict[str, Any] = create_app(settings).openapi()
    return spec


def _anchor(name: str) -> str:
    return "schema-" + "".join(c if c.isalnum() else "-" for c in name.lower())


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(_type(part) for part in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    return str(kind or "any")


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    out = [f"### `{method.upper()} {path}`", ""]
    if op.get("summary"):
        out += [f"**{op['summary']}**", ""]
    if op.get("description"):
        out += [op["description"].strip(), ""]
    params = op.get("parameters", [])
    if params:
        out += ["| Parameter | In | Type | Required | Description |", "|---|---|---|---|---|"]
        for p in params:
            required = "yes" if p.get("required") else ""
            kind = _type(p.get("schema", {}))
            out.append(f"| `{p['name']}` | {p['in']} | {kind} | {required} | {_cell(p.get('description'))} |")
        out.append("")
    body = op.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        out += [f"Request body (`{media}`): {_type(content.get('schema', {}))}", ""]
    responses = op.get("responses", {})
    if responses:
        out += ["| Status | Meaning | Body |", "|---|---|---|"]
        for status, response in responses.items():
            bodies = [
                f"{_type(c.get('schema', {}))} (`{media}`)"
                for media, c in response.get("content", {}).items()
            ]
            out.append(f"| {status} | {_cell(response.get('description'))} | {', '.join(bodies)} |")
        out.append("")
    return out


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    out = [f"### {name} {{#{_anchor(name)}}}", ""]
    if schema.get("description"):
        out += [_cell(schema["description"]), ""]
    props = schema.get("properties", {})
    if props:
        required = set(schema.get("required", []))
        out += ["| Field | Type | Required | Description |", "|---|---|---|---|"]
        for field, prop in props.items():
            flag = "yes" if field in required else ""
            out.append(f"| `{field}` | {_type(prop)} | {flag} | {_cell(prop.get('description'))} |")
        out.append("")
    elif "properties" not in schema:
        out += [f"Type: {_type(schema)}", ""]
    return out


def api_reference(spec: dict[str, Any]) -> str:
    info = spec["info"]
    out = [
        "# HTTP API reference",
        "",
        f"Generated from the OpenAPI {spec['openapi']} document of Switchboard {info['version']} at build "
        "time; a running gateway serves the same document at `GET /openapi.json` (and an interactive page "
        "at `/docs`). Download it: [openapi.json](openapi.json). Error shapes, pagination and "
        "`Idempotency-Key` are described in [Conventions](../conventions.md).",
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["Other"])[0]
                by_tag.setdefault(tag, []).append((method, path, item[method]))
    tags = [t["name"] for t in spec.get("tags", [])] + sorted(set(by_tag) - {t["name"] for t in spec["tags"]})
    descriptions = {t["name"]: t.get("description", "") for t in spec.get("tags", [])}
    for tag in tags:
        if tag not in by_tag:
            continue
        out += [f"## {tag}", ""]
        if descriptions.get(tag):
            out += [descriptions[tag], ""]
        for method, path, op in by_tag[tag]:
            out += _operation(method, path, op)
    out += ["## Schemas", ""]
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        out += _schema(name, schema)
    return "\n".join(out)
