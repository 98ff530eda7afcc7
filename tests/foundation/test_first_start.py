"""The first start as a new user sees it: `scripts/serve` says what it installs, the package builds without
setuptools' deprecation banner, the start-up log names the console and the next step, `GET /` leads to the
console, and a SQLite file the gateway had to create is announced (a typo'd path is visible)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.gateway import TEST_JWT_SECRET, Gateway
from tests.support.gateway import test_encryption_keys as encryption_keys

ROOT = Path(__file__).resolve().parents[2]
SWITCHBOARD = Path(sys.executable).with_name("switchboard")
READY = "ready (database:"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve_until_ready(cwd: Path, database_url: str) -> tuple[str, int, subprocess.Popen[bytes]]:
    """Starts `switchboard serve` in cwd and waits for its ready line: the log so far, port, process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(
        SWITCHBOARD_DATABASE_URL=database_url,
        SWITCHBOARD_JWT_SECRET=TEST_JWT_SECRET,
        SWITCHBOARD_ENCRYPTION_KEYS=encryption_keys("k1"),
    )
    port = _free_port()
    log_path = cwd / f"serve-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(SWITCHBOARD), "serve", "--port", str(port)],
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while READY not in log_path.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            raise AssertionError(f"serve did not become ready:\n{log_path.read_text()}")
        time.sleep(0.05)
    # The line after the ready line is written in the same breath; wait for it rather than assume it.
    while "console:" not in log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return log_path.read_text(), port, process


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise


def test_a_new_sqlite_file_is_announced_and_the_log_names_the_console_and_the_next_step(
    tmp_path: Path,
) -> None:
    # The typo: `vra` for `var`. SQLite would create it silently and the gateway log "ready".
    typo = tmp_path / "vra" / "switchboard.db"
    url = "sqlite+aiosqlite:///vra/switchboard.db"
    log, port, process = _serve_until_ready(tmp_path, url)
    try:
        assert f"created a new database at {typo}" in log, log
        base = f"http://127.0.0.1:{port}"
        assert f"console: {base}/console" in log, log
        assert "switchboard user create --email" in log and "switchboard key create" in log, log
        root = httpx.get(f"{base}/", timeout=10)
        assert root.status_code == 307 and root.headers["location"] == "/console"
        console = httpx.get(f"{base}/", timeout=10, follow_redirects=True)
        assert console.status_code == 200 and console.headers["content-type"].startswith("text/html")
    finally:
        _stop(process)
    again, _port, process = _serve_until_ready(tmp_path, url)
    _stop(process)
    assert "created a new database" not in again, again


def test_root_redirects_to_the_console(gateway: Gateway) -> None:
    answer = gateway.client().get("/", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/console"


def test_the_package_builds_without_a_deprecation_warning(tmp_path: Path) -> None:
    """What `pip install -e .` in scripts/serve prints: setuptools' banners come from reading pyproject.toml.
    Built from a copy, so that no egg-info is written into the checkout (the other database's run may be
    reading it)."""
    project = tmp_path / "project"
    (project / "src" / "switchboard").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project / name)
    (project / "src" / "switchboard" / "__init__.py").write_text("")
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta; "
            "build_meta.prepare_metadata_for_build_wheel(sys.argv[1])",
            str(out),
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Deprecat" not in done.stderr + done.stdout, done.stderr
    assert list(out.glob("switchboard-*.dist-info"))


def _stub_checkout(tmp_path: Path) -> Path:
    """A copy of scripts/serve beside a pyproject.toml and a .venv whose pip and switchboard only say so."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "serve", checkout / "scripts" / "serve")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'stub'\n")
    bin_dir = checkout / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, body in {
        "python": "exit 0",
        "pip": 'echo "pip $*" >> "$(dirname "$0")/../calls"',
        "switchboard": 'echo "switchboard $*" >> "$(dirname "$0")/../calls"',
    }.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return checkout


def test_scripts_serve_says_what_it_installs_on_the_first_start_only(tmp_path: Path) -> None:
    checkout = _stub_checkout(tmp_path)
    first = subprocess.run(
        ["bash", "scripts/serve", "--port", "9001"], cwd=checkout, capture_output=True, text=True, timeout=60
    )
    assert first.returncode == 0, first.stderr
    assert "installing Switchboard" in first.stderr, first.stderr
    calls = (checkout / ".venv" / "calls").read_text().splitlines()
    assert any(call.startswith("pip install") for call in calls)
    assert calls[-1] == "switchboard serve --port 9001"
    second = subprocess.run(
        ["bash", "scripts/serve"], cwd=checkout, capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 0 and "installing" not in second.stderr, second.stderr
    assert (checkout / ".venv" / "calls").read_text().splitlines()[len(calls) :] == ["switchboard serve"]
