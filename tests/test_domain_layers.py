"""Imports that ran against the layers once (issue 34) and must not come back.

Upstream (the provider layer, which credentials, catalog, metering and routing build on) imports no
domain; auth, which every domain asks who the caller is, imports none of them; the catalog reads its
own configuration (`routing:`, `fallbacks:`) and imports nothing of routing, which reads the catalog.
Metering (economies, prices, usage records, the writer's queue) imports nothing of limits, which
reads metering's economies, prices and records through `metering.service` alone: an economy's
budget reaches its limit through `metering.economies.BudgetLimits`. Settlement, which commits a
call's record with its limits' settlement, sits above both, and neither imports it.
Imports inside functions count: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "switchboard"
DOMAINS = (
    "agents",
    "auth",
    "catalog",
    "credentials",
    "groups",
    "idempotency",
    "limits",
    "metering",
    "routing",
    "settlement",
)


def _imported_packages(package: str) -> dict[str, set[str]]:
    """Module (relative to src/switchboard) → the switchboard packages it imports, lazily or not."""
    found: dict[str, set[str]] = {}
    for path in sorted((SRC / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                if node.module == "switchboard":
                    names.update(f"switchboard.{alias.name}" for alias in node.names)
        parts = {name.split(".")[1] for name in names if name.startswith("switchboard.")}
        found[path.relative_to(SRC).as_posix()] = parts
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("upstream", set(DOMAINS)),
        ("auth", set(DOMAINS) - {"auth"}),
        ("catalog", {"routing"}),
        ("metering", {"limits", "settlement"}),
        ("limits", {"settlement"}),
    ],
)
def test_a_lower_package_imports_nothing_above_it(package: str, forbidden: set[str]) -> None:
    against = {
        module: sorted(parts & forbidden)
        for module, parts in _imported_packages(package).items()
        if parts & forbidden
    }
    assert against == {}


def test_limits_reads_metering_through_its_service_module_only() -> None:
    through: set[str] = set()
    for path in sorted((SRC / "limits").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            through.update(name for name in names if name.startswith("switchboard.metering"))
    assert through == {"switchboard.metering.service"}


def test_the_check_sees_lazy_imports() -> None:
    # groups/auth_routes.py reads the economies' table inside a function: still an import of metering.
    assert "metering" in _imported_packages("groups")["groups/auth_routes.py"]
