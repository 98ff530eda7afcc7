"""scripts/test itself, on a stub checkout: a missing Debian package stops it with the line that installs
it, and its closing line and exit status tell a failure or an empty run from a pass."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What scripts/test runs besides its own .venv; chromium, npm and tinyproxy are stubs added per test.
TOOLS = (
    "bash",
    "env",
    "setsid",
    "tee",
    "mktemp",
    "rm",
    "cat",
    "ls",
    "sha1sum",
    "cut",
    "dirname",
    "id",
    "grep",
    "mkdir",
)


def _executable(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _checkout(tmp_path: Path, *, present: tuple[str, ...], pytest_says: str, pytest_exit: int) -> Path:
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test", checkout / "scripts" / "test")
    pyproject = checkout / "pyproject.toml"
    pyproject.write_text("[project]\nname = 'stub'\n")
    venv = checkout / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / f".installed-{hashlib.sha1(pyproject.read_bytes()).hexdigest()[:12]}").touch()
    (venv / "bin" / "python").symlink_to(sys.executable)  # the closing line's sum is Python
    _executable(venv / "bin" / "pytest", f"echo '{pytest_says}'\nexit {pytest_exit}")
    _executable(venv / "claude" / "bin" / "claude", "exit 0")
    # The pinned oidc-provider (tests/sso) is installed already, as Claude Code is.
    pinned = re.search(r"^OIDC_PROVIDER_VERSION=(\S+)$", (ROOT / "scripts" / "test").read_text(), re.M)
    assert pinned, "scripts/test pins oidc-provider"
    package = venv / "oidc" / "node_modules" / "oidc-provider" / "package.json"
    package.parent.mkdir(parents=True)
    package.write_text(f'{{"name": "oidc-provider", "version": "{pinned.group(1)}"}}')
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in TOOLS:
        found = shutil.which(name)
        assert found, name
        (tools / name).symlink_to(found)
    for name in present:
        _executable(tools / name, "exit 0")
    return checkout


def _run(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(checkout.parent / "bin"), "HOME": str(checkout.parent)}
    return subprocess.run(
        ["bash", "scripts/test", *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_missing_debian_package_stops_the_run_naming_it(tmp_path: Path) -> None:
    checkout = _checkout(
        tmp_path, present=("npm", "pgbouncer"), pytest_says="1 passed in 0.01s", pytest_exit=0
    )
    done = _run(checkout, "sqlite")
    assert done.returncode == 2
    assert "missing Debian packages the tests need: chromium tinyproxy" in done.stderr, done.stderr
    assert "apt-get install --no-install-recommends chromium tinyproxy" in done.stderr
    assert "1 passed" not in done.stdout  # no test ran


def test_the_closing_line_counts_and_the_exit_status_follows_it(tmp_path: Path) -> None:
    everything = ("chromium", "npm", "tinyproxy", "pgbouncer")
    passed = _run(
        _checkout(tmp_path / "a", present=everything, pytest_says="3 passed in 0.01s", pytest_exit=0),
        "sqlite",
    )
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines()[-1] == "total: 3 passed, 0 failed"
    failed = _run(
        _checkout(
            tmp_path / "b", present=everything, pytest_says="1 failed, 2 passed in 0.01s", pytest_exit=1
        ),
        "sqlite",
    )
    assert failed.returncode != 0 and failed.stdout.splitlines()[-1] == "total: 2 passed, 1 failed"
    empty = _run(
        _checkout(tmp_path / "c", present=everything, pytest_says="no tests ran in 0.01s", pytest_exit=5),
        "sqlite",
    )
    assert empty.returncode != 0 and empty.stdout.splitlines()[-1] == "total: 0 passed, 0 failed"


def test_the_test_command_never_runs_apt_or_a_global_npm_install() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    commands = [line.split("#", 1)[0] for line in script.splitlines() if not line.lstrip().startswith("#")]
    assert not any("apt-get" in line and "say" not in line for line in commands)
    assert not any("sudo" in line and "say" not in line for line in commands)
    assert all("--prefix .venv/" in line for line in commands if "npm install" in line and "say" not in line)
    assert "ALTER SYSTEM" not in script and "pg_ctlcluster" not in script
    assert os.access(ROOT / "scripts" / "test", os.X_OK)
