"""uvicorn is pinned exactly because the gateway builds on parts of it that are not its public API.

`server_protocol.HttpToolsHeadHolding` subclasses `HttpToolsProtocol` (its parser callbacks, `cycle`,
`flow`, `pipeline`, keep-alive and upgrade helpers) and `observability.workers.MetricsMultiprocess`
subclasses `Multiprocess` (`processes`, `keep_subprocess_alive`, `restart_all`). Neither has a
compatibility promise, so the modules they come from are fingerprinted here: a different uvicorn,
or the same version rebuilt differently, fails this test until someone has re-read those modules
against the two subclasses (and their tests) and recorded the new fingerprints.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

# sha256 of each module's source, as uvicorn 0.54.0 ships it.
SUBCLASSED = {
    "uvicorn.protocols.http.httptools_impl": (
        "1d4e1c579df4168433a61a01f10c628b31c1790e72dd9769d2b8633b22214033"
    ),
    "uvicorn.protocols.http.flow_control": "d39d16560df512f3ce907c329c2a0c3f5cd7165fef3b753876eae5739bf2a785",
    "uvicorn.supervisors.multiprocess": "53541976227fec0b9ace2c7a5ce8f592ed0d8ff37f3c93c2a18baae9236365c2",
}


def _pinned() -> str:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    found = [d for d in dependencies if re.match(r"uvicorn(\[[^\]]*\])?\s*[=<>~!]", d)]
    assert len(found) == 1, found
    pinned = re.fullmatch(r"uvicorn(\[[^\]]*\])?==([0-9][0-9A-Za-z.]*)", found[0].replace(" ", ""))
    assert pinned is not None, f"uvicorn must be pinned with ==, not {found[0]!r}"
    return pinned.group(2)


def test_the_installed_uvicorn_is_the_one_pyproject_pins() -> None:
    assert version("uvicorn") == _pinned()


@pytest.mark.parametrize("module", sorted(SUBCLASSED))
def test_the_modules_the_gateway_subclasses_are_the_ones_it_was_written_against(module: str) -> None:
    source = Path(importlib.import_module(module).__file__ or "").read_bytes()
    assert hashlib.sha256(source).hexdigest() == SUBCLASSED[module], (
        f"{module} changed: re-read it against server_protocol.py / observability/workers.py, "
        "run tests/test_server_protocol.py and tests/serving, then update SUBCLASSED"
    )
