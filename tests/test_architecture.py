"""House rules that matter, checked by walking src/ with `ast` and the served OpenAPI document."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.gateway import Gateway

SRC = Path(__file__).resolve().parents[1] / "src" / "switchboard"
MAX_LINES = 500
# Only the error renderer may name Starlette's HTTPException: it turns the framework's own 404/405 into ours.
HTTP_EXCEPTION_ALLOWED = {"error_shapes.py"}
# A name like a secret, unless it is an identifier of one (`api_key_id` references a key, it is not one).
SECRET_FIELD = re.compile(
    r"^(?!.*_ids?$).*(secret|api_?key|password|passwd|ciphertext|private_?key)", re.IGNORECASE
)
# Response fields allowed despite their names, each with the rule that allows it.
SECRET_FIELD_ALLOWED = {
    # SPEC §10 / the seed: the one-time API key issue result shows the key once, at creation.
    ("post", "/auth/api-key/generate", "api_key"),
    # SPEC §7: credentials show only the last four characters of their secret.
    ("*", "*", "secret_hint"),
    # SPEC §22: a webhook's signing secret is shown once, in the answer that creates it.
    ("post", "/webhooks", "secret"),
}


@functools.cache
def _parsed() -> tuple[tuple[Path, ast.Module], ...]:
    """Every module parsed once per run: a dozen tests walk them all (nothing here changes a tree)."""
    return tuple(
        (path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        for path in sorted(SRC.rglob("*.py"))
    )


def modules() -> Iterator[tuple[Path, ast.Module]]:
    yield from _parsed()


def rel(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def imported_roots(tree: ast.Module) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@functools.cache
def _roots() -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((rel(path), frozenset(imported_roots(tree))) for path, tree in modules())


def offenders(package_root: str, allowed_dir: str) -> list[str]:
    return [
        name for name, roots in _roots() if package_root in roots and not name.startswith(allowed_dir + "/")
    ]


def test_litellm_is_imported_only_under_upstream() -> None:
    assert offenders("litellm", "upstream") == []


def test_the_relays_http_client_parts_are_imported_only_under_upstream() -> None:
    # The server's own protocol parses request heads with httptools too (uvicorn's parser), by design.
    assert offenders("httptools", "upstream") == ["server_protocol.py"]
    assert offenders("aiohappyeyeballs", "upstream") == []
    assert offenders("aiohttp", "upstream") == []


def test_pyjwt_is_imported_only_under_auth() -> None:
    assert offenders("jwt", "auth") == []


def test_no_module_is_over_500_lines() -> None:
    too_long = {
        rel(path): n
        for path in SRC.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert too_long == {}


def _switchboard_imports(tree: ast.Module) -> set[str]:
    """The `switchboard.<package>` names a module imports, TYPE_CHECKING blocks included."""
    found: set[str] = set()
    for node in ast.walk(tree):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found.update(".".join(n.split(".")[:2]) for n in names if n.startswith("switchboard."))
    return found


def test_observability_does_not_import_the_pipeline() -> None:
    # Telemetry reads a call through observability/attempt.AttemptFacts, a protocol the pipeline meets.
    upward = [
        rel(path)
        for path, tree in modules()
        if rel(path).startswith("observability/") and "switchboard.llm" in _switchboard_imports(tree)
    ]
    assert upward == []


def _modules_imported(tree: ast.Module) -> set[str]:
    """The full `switchboard…` module names a module imports, TYPE_CHECKING blocks included."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("switchboard."))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("switchboard."):
            # `from switchboard.x import y` may import the module x.y: both names are kept.
            found.add(f"{node.module}")
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _importing(package: str, imported: str) -> list[str]:
    return [
        f"{rel(path)} imports {name}"
        for path, tree in modules()
        if rel(path).startswith(package + "/")
        for name in sorted(_modules_imported(tree))
        if name == imported or name.startswith(imported + ".")
    ]


def test_surfaces_and_provider_adapters_meet_only_in_wire() -> None:
    """A wire format both sides read (Anthropic's, the SSE framing) lives in `wire/`, which both import."""
    assert _importing("surfaces", "switchboard.upstream.adapters") == []
    assert _importing("upstream/adapters", "switchboard.surfaces") == []


def test_wire_imports_no_domain() -> None:
    """`wire/` sits beside kit and errors: formats, no domain, no pipeline."""
    allowed = ("switchboard.wire", "switchboard.kit", "switchboard.errors")
    upward = [
        f"{rel(path)} imports {name}"
        for path, tree in modules()
        if rel(path).startswith("wire/")
        for name in sorted(_modules_imported(tree))
        if not any(name == root or name.startswith(root + ".") for root in allowed)
    ]
    assert upward == []


def test_the_pipeline_takes_no_untyped_state() -> None:
    """The pipeline's services come typed (llm/services.Pipeline), never as `state: Any`."""
    untyped = [
        f"{rel(path)}:{arg.lineno}"
        for path, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for arg in node.args.args + node.args.kwonlyargs
        if arg.arg == "state" and isinstance(arg.annotation, ast.Name) and arg.annotation.id == "Any"
    ]
    assert untyped == []


def test_every_module_opens_with_a_docstring() -> None:
    missing = [rel(path) for path, tree in modules() if path.stat().st_size and not ast.get_docstring(tree)]
    assert missing == []


def test_http_exception_is_never_used() -> None:
    found = []
    for path, tree in modules():
        if rel(path) in HTTP_EXCEPTION_ALLOWED:
            continue
        for node in ast.walk(tree):
            named = (
                (isinstance(node, ast.Name) and node.id == "HTTPException")
                or (isinstance(node, ast.Attribute) and node.attr == "HTTPException")
                or (isinstance(node, ast.alias) and node.name.split(".")[-1] == "HTTPException")
            )
            if named:
                found.append(f"{rel(path)}:{getattr(node, 'lineno', '?')}")
    assert found == []


def test_routers_import_no_sqlalchemy_http_client_or_litellm() -> None:
    banned = {"sqlalchemy", "httpx", "aiohttp", "httptools", "litellm"}
    found = {
        rel(path): sorted(imported_roots(tree) & banned)
        for path, tree in modules()
        if path.name == "router.py" and imported_roots(tree) & banned
    }
    assert found == {}


def _schema_fields(schema: dict[str, Any], components: dict[str, Any], seen: set[str]) -> Iterator[str]:
    """Every property name reachable from a schema, following $refs, arrays, unions and maps."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            yield from _schema_fields(components.get(name, {}), components, seen)
        return
    for field_name, sub in schema.get("properties", {}).items():
        yield field_name
        yield from _schema_fields(sub, components, seen)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _schema_fields(schema[key], components, seen)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in schema.get(key, []):
            yield from _schema_fields(sub, components, seen)


def _allowed(method: str, path: str, field_name: str) -> bool:
    return any(
        m in ("*", method) and p in ("*", path) and f == field_name for m, p, f in SECRET_FIELD_ALLOWED
    )


def test_no_response_schema_has_a_secret_field(gateway: Gateway) -> None:
    # The first request builds the document: seconds on a busy machine, past httpx's default 5 s.
    document = httpx.get(gateway.url + "/openapi.json", timeout=60).json()
    components = document.get("components", {}).get("schemas", {})
    found = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation.get("responses", {}).items():
                for media in response.get("content", {}).values():
                    for field_name in _schema_fields(media.get("schema", {}), components, set()):
                        if SECRET_FIELD.search(field_name) and not _allowed(method, path, field_name):
                            found.append(f"{method.upper()} {path} {status}: {field_name}")
    assert found == []


@pytest.mark.parametrize(
    ("field_name", "method", "path", "flagged"),
    [
        ("secret", "get", "/llm-credentials", True),
        ("api_key", "get", "/auth/api-keys", True),
        ("ciphertext", "get", "/x", True),
        ("password", "post", "/auth/login", True),
        ("api_key", "post", "/auth/api-key/generate", False),
        ("secret_hint", "get", "/llm-credentials", False),
        ("label", "get", "/llm-credentials", False),
        ("api_key_id", "get", "/protected/jwt", False),
        ("client_secret", "get", "/x", True),
    ],
)
def test_the_secret_field_rule_flags_what_it_should(
    field_name: str, method: str, path: str, flagged: bool
) -> None:
    assert (bool(SECRET_FIELD.search(field_name)) and not _allowed(method, path, field_name)) is flagged
