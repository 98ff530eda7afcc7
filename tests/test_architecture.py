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
MAX_LINES = 400
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


def test_no_module_is_over_400_lines() -> None:
    too_long = {
        rel(path): n
        for path in SRC.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert too_long == {}


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


def test_a_calls_request_attempts_reservation_and_cache_ticket_are_frozen() -> None:
    """What the client asked is decoded once and never changed; each attempt is a new value; what
    `ledger.begin` holds is returned, not set on the call (STYLE.md, "Immutable where it can be")."""
    from switchboard.cache.request import CacheTicket
    from switchboard.llm.call_attempt import Attempt
    from switchboard.llm.context import CallRequest
    from switchboard.llm.ledger import Reservation

    # A NamedTuple where one is built on every call: as immutable as a frozen dataclass, and built
    # without the frozen dataclass's object.__setattr__ call per field.
    for value in (CallRequest, Attempt, Reservation):
        assert issubclass(value, tuple) and hasattr(value, "_fields"), value.__name__
        assert vars(value).get("__slots__") == (), value.__name__  # no per-call __dict__
    params = getattr(CacheTicket, "__dataclass_params__", None)
    assert params is not None and params.frozen
    assert "__slots__" in vars(CacheTicket)


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


# The layer order (issue 34, STYLE "Layers you can name"): every import goes down or sideways. Each
# top-level package or module has a layer; a few cross-cutting packages have a low half and a high
# half, named module by module (the longest dotted prefix listed decides). An import counts whatever
# its form: at the top, inside a function (a lazy import is still a dependency), under TYPE_CHECKING.
# Bottom to top; docs/ARCHITECTURE.md ("Layers") says why upstream sits under the domains.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    # Domain-free: the package's own names (its version), helpers, the error hierarchy.
    ("foundation", frozenset({"switchboard", "kit", "errors"})),
    # What every request touches whatever it asks: the database, error rendering, the request's
    # context and telemetry (which reads calls through protocols it declares), the ASGI server.
    (
        "platform",
        frozenset(
            {
                "db",
                "error_shapes",
                "openapi_errors",
                "request_context",
                "cors",
                "lifecycle",
                "logging_setup",
                "server_protocol",
                "observability",
                "console",
                "wire",
                # The caller as a value (Principal, its role names): what the audit trail records
                # and what the OIDC settings map claims to; auth's services stay at "identity".
                "auth.principal",
            }
        ),
    ),
    # The only code that talks to providers; it knows provider kinds, endpoints, proxies, egress.
    ("providers", frozenset({"upstream"})),
    # The operator's config file and the environment, validated against what upstream knows.
    ("configuration", frozenset({"config_file", "settings", "startup_errors", "sso.config"})),
    # What a domain writes in its own transaction: the audit trail and the webhook outbox.
    (
        "records",
        frozenset(
            {
                "audit.events",
                "audit.chain",
                "audit.models",
                "audit.origin",
                "audit.sign_ins",
                "webhooks.events",
                "webhooks.models",
                "webhooks.outbox",
            }
        ),
    ),
    # Who is calling: every domain asks.
    ("identity", frozenset({"auth"})),
    # How users are gathered and what they are answered: rooms and economies (each reads the other's
    # membership: a room has a default economy, a colleague shares a room or an economy), usage
    # records and prices, the replay of an answer already given.
    ("accounts", frozenset({"groups", "metering", "idempotency"})),
    # What a call is made of: provider keys (a room's or the gateway's) and the model catalog.
    ("resources", frozenset({"credentials", "catalog"})),
    # Rules over those resources: agents, limits, the attempt plan.
    ("rules", frozenset({"agents", "limits", "routing"})),
    # Built over the domains: the one settlement transaction, the audit trail's capture and read
    # API, webhook delivery and thresholds, SSO, the response cache, discovery, inbound formats.
    (
        "services",
        frozenset({"settlement", "audit", "webhooks", "sso", "cache", "discovery", "surfaces"}),
    ),
    # The model call's pipeline.
    ("pipeline", frozenset({"llm"})),
    # The wiring: the app factory, the command line, the server's processes.
    ("app", frozenset({"app", "cli", "keys_rotation_cli", "serving"})),
)
RANK: dict[str, int] = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}

# (importing module, imported module): imports allowed against the order, each with its reason.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("metering.economies", "agents.models"): (
        "deleting an economy is refused while an agent still meters to it: one EXISTS on the agents'"
        " table, read only to refuse, inside the function (a registry of referrers would be more code"
        " than the rule it keeps)"
    ),
}


# Edges in files other helpers are rewriting now (issue 34's other steps); the integrator empties
# this at merge, when those files no longer import upward.
def _dotted(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or "switchboard"


@functools.cache
def _known_modules() -> frozenset[str]:
    return frozenset(_dotted(path) for path, _ in modules())


def switchboard_imports(tree: ast.Module) -> set[str]:
    """The switchboard modules a module imports, without `switchboard.` (`from pkg import module`
    names the module); lazy imports and TYPE_CHECKING blocks included."""
    found: set[str] = set()
    for node in ast.walk(tree):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.append(
                    submodule if submodule.removeprefix("switchboard.") in _known_modules() else node.module
                )
        found.update(
            "switchboard" if name == "switchboard" else name.removeprefix("switchboard.")
            for name in names
            if name == "switchboard" or name.startswith("switchboard.")
        )
    return found


def layer_key(module: str) -> str:
    """The longest dotted prefix of `module` that LAYERS places."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if (key := ".".join(parts[:end])) in RANK:
            return key
    raise KeyError(f"{module} has no layer")


def upward_imports() -> dict[tuple[str, str], str]:
    """(importer, imported) → the two layers, for every import that goes up."""
    found: dict[tuple[str, str], str] = {}
    for path, tree in modules():
        source = _dotted(path)
        low = RANK[layer_key(source)]
        for target in switchboard_imports(tree):
            if (high := RANK[layer_key(target)]) > low:
                found[(source, target)] = f"{LAYERS[low][0]} → {LAYERS[high][0]}"
    return found


def test_every_import_goes_down_or_sideways() -> None:
    allowed = set(EXCEPTIONS)
    assert {edge: layers for edge, layers in upward_imports().items() if edge not in allowed} == {}


def test_every_listed_exception_is_still_needed_and_there_are_at_most_three() -> None:
    found = upward_imports()
    assert [edge for edge in EXCEPTIONS if edge not in found] == []
    assert len(EXCEPTIONS) <= 3


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for path, _ in modules():
        try:
            layer_key(_dotted(path))
        except KeyError:
            unplaced.append(rel(path))
    assert unplaced == []


def test_the_layer_check_sees_lazy_and_type_checking_imports() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from switchboard.llm.context import PreparedCall\n"
        "def f() -> None:\n    import switchboard.app\n    from switchboard.audit import chain, events\n"
        "from switchboard import API_VERSION\n"
    )
    assert switchboard_imports(tree) == {"llm.context", "app", "audit.chain", "audit.events", "switchboard"}
