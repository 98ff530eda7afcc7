"""LiteLLM proxy for comparison: installed from PyPI into its own venv, no database, same upstream."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from bench import payloads
from bench.measure import TargetReport, measure, say
from bench.options import REPO, Options
from bench.probe import time_to_first_answer
from bench.processes import BenchError, Child, free_port
from bench.target import Endpoint, Target
from bench.upstream import Upstream

MASTER_KEY = "sk-bench-litellm-master"
STARTUP_TIMEOUT = 180.0
_CONFIG = """\
model_list:
  - model_name: bench-json
    litellm_params: {{model: openai/{model}, api_base: "{json}", api_key: sk-bench-upstream}}
  - model_name: bench-stream
    litellm_params: {{model: openai/{model}, api_base: "{stream}", api_key: sk-bench-upstream}}
general_settings:
  master_key: {key}
"""


def pinned_version() -> str:
    """The litellm version Switchboard itself pins in pyproject.toml."""
    deps: list[str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in deps:
        name, sep, version = dep.partition("==")
        if sep and name.strip() == "litellm":
            return version.strip()
    raise BenchError("pyproject.toml does not pin litellm==<version>")


def install(work: Path) -> Path:
    venv = work / "litellm-venv"
    version = pinned_version()
    stamp = venv / f".installed-{version}"
    if not stamp.exists():
        say(f"  installing litellm[proxy]=={version} from PyPI into {venv} (once)")
        log = work / "litellm-install.log"
        with log.open("w") as out:
            for argv in (
                [sys.executable, "-m", "venv", "--clear", str(venv)],
                [str(venv / "bin" / "pip"), "install", "-q", "--upgrade", "pip"],
                [str(venv / "bin" / "pip"), "install", "-q", f"litellm[proxy]=={version}"],
            ):
                if subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False).returncode:
                    raise BenchError(f"installing LiteLLM failed: {' '.join(argv)}; see {log}")
        stamp.touch()
    return venv / "bin" / "litellm"


def run(opts: Options, upstream: Upstream, direct: Target) -> list[TargetReport]:
    say("\n== LiteLLM proxy (no database)")
    litellm = install(opts.work)
    home = opts.work / "litellm"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.yaml"
    config.write_text(
        _CONFIG.format(
            model=payloads.UPSTREAM_MODEL,
            json=upstream.json_base_url,
            stream=upstream.stream_base_url,
            key=MASTER_KEY,
        )
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "LITELLM_MASTER_KEY")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of the price list from GitHub at start
    auth = {"Authorization": f"Bearer {MASTER_KEY}"}
    reports = []
    for workers in opts.workers:
        name = f"litellm x{workers}"
        say(f"\n== {name}")
        port = free_port()
        argv = [
            str(litellm),
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--num_workers",
            str(workers),
        ]
        child = Child(name, argv, home / f"litellm-w{workers}.log", env=env, cwd=home)
        try:
            url = f"http://127.0.0.1:{port}/v1/chat/completions"
            target = Target(
                name=name,
                pid=child.pid,
                workers=workers,
                json=Endpoint(url, payloads.request_body("bench-json", False), auth),
                stream=Endpoint(url, payloads.request_body("bench-stream", True), auth),
            )
            report = TargetReport(name=name, kind="litellm", db=None, workers=workers)
            report.startup_s = time_to_first_answer(child, target.json, STARTUP_TIMEOUT)
            say(f"  start to first answered /v1 call: {report.startup_s:.2f} s")
            measure(opts, direct, target, report)
            reports.append(report)
        finally:
            child.stop()
    return reports
