"""Every example of the README and the documentation site runs as written, against the shipped configuration.

A fenced block says how it is checked by an HTML comment on the line before it:
- `<!-- example:NAME -->` (bash or python): run, in page order, in one shell after the README's quick start,
  against a gateway started on `config/switchboard.yaml` and the fake provider; `EXPECTED` says what
  each one's output must contain.
- `<!-- config-example -->` (yaml): merged into the shipped config file, which must then load.
- `<!-- kubernetes-example -->` (yaml): parses, its catalog loads, its settings are documented ones.
- `<!-- not-run: why -->`: needs what the suite does not have (Docker, Node.js, Claude Code, …).
Every bash, python or js block carries one of these; json blocks must parse; every block names a language.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from switchboard.catalog.catalog import build_catalog
from switchboard.config_file import parse_config
from tests.fakes.script import DEFAULT_REPLY
from tests.support.gateway import Gateway

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_CONFIG = ROOT / "config" / "switchboard.yaml"
README_ADDRESS = "http://127.0.0.1:8000"
ANTHROPIC_ADDRESS = "https://api.anthropic.com"
VENV_BIN = Path(sys.prefix) / "bin"
MARKER = re.compile(
    r"<!--\s*(example:[\w-]+|not-run:[^>]*|config-example|kubernetes-example|shapes:[^>]*)\s*-->"
)
FENCE = re.compile(r"(\s*)```(\S*)\s*")
# Blocks a reader would copy and run: each says whether the suite runs it, or why not.
COMMANDS = {"bash", "sh", "shell", "console", "python", "js", "javascript", "ts"}

# What each example's output must contain (its exit status must be 0, and no JSON error may be printed).
EXPECTED: dict[str, list[str]] = {
    "quickstart": ['"provider": "openai"', "data: [DONE]", '"object":"chat.completion.chunk"'],
    "curl": ['"object":"chat.completion"'],
    "python": [DEFAULT_REPLY],
    "anthropic-credential": ['"provider": "anthropic"'],
    "models": ['"object":"list"', '"id":"fast"'],
    "embeddings": ['"embedding"'],
    "langchain": [DEFAULT_REPLY],
    "responses": [DEFAULT_REPLY],
    "agents-env": [],
    "agents-sdk": [DEFAULT_REPLY],
    "agents-sdk-model": [DEFAULT_REPLY],
    "pydantic-ai": [DEFAULT_REPLY],
    "anthropic-sdk": [DEFAULT_REPLY],
    "count-tokens": ['"input_tokens"'],
    "selectors": [
        "default -> openai/gpt-4o-mini",
        "tag:fast -> openai/gpt-4o-mini",
        "fast -> openai/gpt-4o-mini",
    ],
    "mistral-credential": ['"provider": "mistral"'],
    "api-key-client": ["'fast'"],
    "usage-export": [],
    "limits-cli": ["remaining:", "cost/month"],
    "limits-worked": ["x-ratelimit-limit-requests: 30", "x-switchboard-budget-remaining"],
}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    marker: str | None
    body: str

    @property
    def name(self) -> str | None:
        return (
            self.marker.removeprefix("example:")
            if self.marker and self.marker.startswith("example:")
            else None
        )

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README first, then the docs in the order the examples build on each other (limits change the
    quick start's user, so they run last). ARCHITECTURE.md is for contributors and holds no examples."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "ARCHITECTURE.md")
    first, last = [ROOT / "docs" / "getting-started.md"], [ROOT / "docs" / "limits.md"]
    return [ROOT / "README.md", *first, *(p for p in docs if p not in first + last), *last]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    marker: str | None = None
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        fence = FENCE.fullmatch(lines[index])
        if MARKER.fullmatch(stripped):
            marker = MARKER.fullmatch(stripped).group(1)  # type: ignore[union-attr]
        elif fence:
            indent, start, body = len(fence.group(1)), index, []
            index += 1
            while index < len(lines) and lines[index].strip() != "```":
                body.append(lines[index][indent:])
                index += 1
            found.append(Block(page, start + 1, fence.group(2), marker, "\n".join(body) + "\n"))
            marker = None
        elif stripped:
            marker = None
        index += 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def example(page: Path, name: str) -> Block:
    matches = [block for block in blocks(page) if block.name == name]
    assert len(matches) == 1, f"{page.name} has {len(matches)} examples named {name!r}"
    return matches[0]


def test_every_block_says_how_it_is_checked() -> None:
    problems = []
    for block in all_blocks():
        if not block.lang:
            problems.append(f"{block}: a fence without a language (```text for output)")
        elif block.lang in COMMANDS and block.marker is None:
            problems.append(f"{block}: mark it <!-- example:NAME --> (run) or <!-- not-run: why -->")
        elif block.name is not None and block.lang not in {"bash", "python", "text"}:
            problems.append(f"{block}: an example the suite runs is bash or python")
    names = [(block.page, block.name) for block in all_blocks() if block.name]
    problems += [
        f"{page.name}: two examples named {name}"
        for page, name in set(names)
        if names.count((page, name)) > 1
    ]
    assert not problems, "\n".join(problems)


def test_json_blocks_parse() -> None:
    decoder = json.JSONDecoder()
    checked = 0
    for block in (b for b in all_blocks() if b.lang == "json"):
        text, position = block.body.strip(), 0
        while position < len(text):  # one value, or several one after the other (JSON lines)
            _, end = decoder.raw_decode(text, position)
            position = end + (len(text[end:]) - len(text[end:].lstrip()))
        checked += 1
    assert checked >= 2


def _load(config: dict[str, Any], where: str) -> None:
    build_catalog(parse_config(yaml.safe_dump(config), where))


def test_config_examples_load_into_the_shipped_configuration() -> None:
    shipped = yaml.safe_load(SHIPPED_CONFIG.read_text(encoding="utf-8"))
    checked = 0
    for block in all_blocks():
        if block.lang != "yaml":
            continue
        fragments = list(yaml.safe_load_all(block.body))  # every yaml block parses, marked or not
        if block.marker == "config-example":
            [fragment] = fragments
            assert isinstance(fragment, dict), block
            _load({**shipped, **fragment}, str(block))
            checked += 1
    assert checked >= 6


def test_config_examples_are_checked() -> None:
    """The check above can fail: a fragment with a mistake in it is refused."""
    shipped = yaml.safe_load(SHIPPED_CONFIG.read_text(encoding="utf-8"))
    with pytest.raises(Exception, match="nosuch"):
        _load({**shipped, "aliases": {"fast": "openai/nosuch-model", "x": "nosuch"}}, "broken")


def test_the_kubernetes_example_parses_and_uses_documented_settings() -> None:
    [block] = [b for b in all_blocks() if b.marker == "kubernetes-example"]
    documents = list(yaml.safe_load_all(block.body))
    kinds = {doc["kind"]: doc for doc in documents}
    assert set(kinds) == {"Secret", "ConfigMap", "Deployment", "Service"}
    _load(yaml.safe_load(kinds["ConfigMap"]["data"]["switchboard.yaml"]), f"{block} ConfigMap")
    documented = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    container = kinds["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    names = [env["name"] for env in container["env"]] + list(kinds["Secret"]["stringData"])
    undocumented = [n for n in names if n.startswith("SWITCHBOARD_") and f"`{n}`" not in documented]
    assert not undocumented
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "WORKERS" in dockerfile and "EXPOSE 8000" in dockerfile and "/data" in dockerfile


def _script(gateway: Gateway, fake_provider: Any, email: str) -> tuple[str, list[str]]:
    """Every runnable example, in page order, as one bash script; the quick start runs once."""
    quickstart = example(ROOT / "README.md", "quickstart")
    assert quickstart.body == example(ROOT / "docs" / "getting-started.md", "quickstart").body, (
        "the README's quick start and Getting started's differ"
    )
    parts, names = [], []
    for block in all_blocks():
        if block.name is None or block.lang == "text":
            continue
        if block.name == "quickstart" and block.page != ROOT / "README.md":
            continue
        names.append(block.name)
        parts.append(f"echo '=== {block.name}'\n")
        if block.lang == "python":
            parts.append(f"{sys.executable} - <<'PY'\n{block.body}PY\n")
        else:
            parts.append(block.body)
        parts.append("echo\n")
    script = "".join(parts)
    script = script.replace("me@example.com", email).replace(README_ADDRESS, gateway.url)
    return script.replace(ANTHROPIC_ADDRESS, fake_provider.base_url), names


def test_examples_run_as_written_on_the_shipped_configuration(
    make_gateway: Any, fake_provider: Any, tmp_path: Path
) -> None:
    gateway = make_gateway(config=SHIPPED_CONFIG.read_text(encoding="utf-8"))
    email = f"me-{uuid.uuid4().hex[:10]}@example.com"  # each run needs an email of its own
    script, names = _script(gateway, fake_provider, email)
    missing = sorted(set(names) - set(EXPECTED))
    assert not missing, f"say what these examples print in EXPECTED: {missing}"
    (tmp_path / ".venv").symlink_to(sys.prefix)  # the quick start calls .venv/bin/switchboard
    key = gateway.settings.encryption_keys[0]
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "OPENAI_API_KEY": "sk-readme-example-key",
        "OPENAI_BASE_URL": f"{fake_provider.base_url}/v1",
        "ANTHROPIC_API_KEY": "sk-ant-readme-example-key",
        "MISTRAL_API_KEY": "readme-example-mistral-key",
        # What `scripts/serve` leaves in ./var, for the test gateway's data directory.
        "SWITCHBOARD_JWT_SECRET": gateway.settings.jwt_secret.get_secret_value(),
        "SWITCHBOARD_ENCRYPTION_KEYS": f"{key.kid}:{key.key.get_secret_value()}",
        "SWITCHBOARD_DATA_DIR": str(gateway.settings.data_dir),
        "SWITCHBOARD_DATABASE_URL": gateway.settings.database_url,
        "SWITCHBOARD_CONFIG": str(gateway.settings.config_path),
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    outputs = dict(re.findall(r"^=== ([\w-]+)\n(.*?)(?=^=== |\Z)", done.stdout, re.S | re.M))
    assert sorted(outputs) == sorted(set(names))
    for name, output in outputs.items():
        assert '"error"' not in output, f"{name}: {output}"
        for text in EXPECTED[name]:  # JSON is printed with or without spaces
            assert text.replace(" ", "") in output.replace(" ", ""), f"{name} should print {text!r}: {output}"
    assert (tmp_path / "jan.csv").read_text().startswith("id,")  # the usage export example's file
    for secret in ("sk-readme-example-key", "sk-ant-readme-example-key", "readme-example-mistral-key"):
        assert secret not in done.stdout
    assert "svc_api_" not in done.stdout  # the key went into the variable, not to the screen


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _normalised(line: str) -> str:
    return re.sub(r"\d+", "N", line.strip())


def test_the_start_up_log_sample_is_what_serve_prints(tmp_path: Path) -> None:
    """The sample (docs/configuration.md) was taken in a checkout at /srv/sb, on port 8000."""
    sample = example(ROOT / "docs" / "configuration.md", "startup-log").body.splitlines()
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "switchboard.yaml").write_text(SHIPPED_CONFIG.read_text(encoding="utf-8"))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "OTEL_"))}
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(VENV_BIN / "switchboard"), "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 90
            while " ready " not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            process.terminate()
            process.wait(timeout=60)
    text = log.read_text().replace(str(tmp_path), "/srv/sb").replace(f":{port}", ":8000")
    real = {_normalised(re.sub(r"^\S+ \S+ ", "", line)) for line in text.splitlines()}
    absent = [line for line in sample if _normalised(line) not in real]
    assert not absent, f"not printed by switchboard serve: {absent}\nit printed:\n{text}"
