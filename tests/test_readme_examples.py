"""Every example of the README and the documentation site runs as written, against the shipped configuration.

A fenced block says how it is checked by an HTML comment on the line before it:
- `<!-- example:NAME -->` (bash or python): run after the README's quick start, against a gateway started
  on `config/switchboard.yaml` and the fake provider, each in a shell of its own that holds what the
  examples before it exported (GATEWAY_STATE and SHELL_STATE below); `EXPECTED` says what each one's
  output must contain.
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
from dataclasses import dataclass, field, replace
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


# Examples that leave state behind for the ones after them. In the gateway (an account, its key, stored
# provider keys): run once per module, in one shell, before the others. In the shell (exports): run again
# at the head of every later example's shell. Every other example runs in a shell of its own, so that
# xdist spreads them; each must work after exactly these, as a reader following the pages has run them.
GATEWAY_STATE = ("quickstart", "anthropic-credential", "mistral-credential")
SHELL_STATE = {"agents-env"}
# They put limits on their caller, which would refuse the calls of the examples after them: they run,
# after the quick start, for an account of their own.
OWN_ACCOUNT = ("limits-cli", "limits-worked")
# Files an example writes, and how each must start.
WRITES = {"usage-export": ("jan.csv", "id,")}
SECRETS = ("sk-readme-example-key", "sk-ant-readme-example-key", "readme-example-mistral-key")


def runnable() -> list[Block]:
    """Every example the suite runs, in page order; the quick start once, the README's."""
    return [
        block
        for block in all_blocks()
        if block.name is not None
        and block.lang != "text"
        and not (block.name == "quickstart" and block.page != ROOT / "README.md")
    ]


def _shell_text(block: Block) -> str:
    if block.lang == "python":
        return f"{sys.executable} - <<'PY'\n{block.body}PY\n"
    return block.body


def _script(chosen: list[Block], gateway: Gateway, fake_provider: Any, email: str) -> str:
    """The examples as one bash script, each output after a `=== NAME` line."""
    parts = [f"echo '=== {block.name}'\n{_shell_text(block)}echo\n" for block in chosen]
    script = "".join(parts).replace("me@example.com", email).replace(README_ADDRESS, gateway.url)
    return script.replace(ANTHROPIC_ADDRESS, fake_provider.base_url)


def _prelude(block: Block) -> list[Block]:
    """The shell-state examples before `block` in page order, in that order."""
    blocks = runnable()
    return [b for b in blocks[: blocks.index(block)] if b.name in SHELL_STATE]


@dataclass
class ReadmeShell:
    """Where the examples run: a gateway on the shipped configuration, a directory, an environment."""

    gateway: Gateway
    fake_provider: Any
    directory: Path
    env: dict[str, str]
    email: str = "me@example.com"  # the quick start's account, once it has run
    outputs: dict[str, str] = field(default_factory=dict)  # of the gateway-state examples, once run

    def run(self, chosen: list[Block], email: str, then: str = "") -> dict[str, str]:
        """Runs `chosen` in one shell, and `then` after them; checks its exit status and what it must
        never print."""
        script = _script(chosen, self.gateway, self.fake_provider, email) + then
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        for secret in SECRETS:
            assert secret not in done.stdout
        assert "svc_api_" not in done.stdout  # the key went into the variable, not to the screen
        outputs = dict(re.findall(r"^=== ([\w-]+)\n(.*?)(?=^=== |\Z)", done.stdout, re.S | re.M))
        assert sorted(outputs) == sorted({block.name for block in chosen})
        return outputs


def _new_email() -> str:
    return f"me-{uuid.uuid4().hex[:10]}@example.com"  # each account needs an email of its own


@pytest.fixture(scope="module")
def readme_gateway(make_gateway: Any, fake_provider: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    gateway = make_gateway(config=SHIPPED_CONFIG.read_text(encoding="utf-8"))
    directory = tmp_path_factory.mktemp("readme")
    (directory / ".venv").symlink_to(sys.prefix)  # the quick start calls .venv/bin/switchboard
    key = gateway.settings.encryption_keys[0]
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(directory),
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
    return ReadmeShell(gateway, fake_provider, directory, env)


@pytest.fixture(scope="module")
def readme(readme_gateway: ReadmeShell) -> ReadmeShell:
    """The gateway-state examples run once, for one account; its key is the later examples'."""
    setup = [block for block in runnable() if block.name in GATEWAY_STATE]
    assert [block.name for block in setup] == list(GATEWAY_STATE), "each runs once, in this order"
    email = _new_email()
    # The key goes to a file, not to the screen (the examples never print it).
    outputs = readme_gateway.run(setup, email, then='printf %s "$SWITCHBOARD_API_KEY" > .api-key\n')
    key = (readme_gateway.directory / ".api-key").read_text()
    assert key.startswith("svc_api_")
    env = {**readme_gateway.env, "SWITCHBOARD_API_KEY": key}
    return replace(readme_gateway, env=env, email=email, outputs=outputs)


def _check(name: str, output: str, directory: Path) -> None:
    assert '"error"' not in output, f"{name}: {output}"
    for text in EXPECTED[name]:  # JSON is printed with or without spaces
        assert text.replace(" ", "") in output.replace(" ", ""), f"{name} should print {text!r}: {output}"
    if name in WRITES:
        file, start = WRITES[name]
        assert (directory / file).read_text().startswith(start), f"{name} should write {file}"


def test_every_example_says_what_it_prints_and_the_quick_starts_agree() -> None:
    quickstart = example(ROOT / "README.md", "quickstart")
    assert quickstart.body == example(ROOT / "docs" / "getting-started.md", "quickstart").body, (
        "the README's quick start and Getting started's differ"
    )
    names = {block.name for block in runnable()}
    missing = sorted(names - set(EXPECTED))  # type: ignore[operator]
    assert not missing, f"say what these examples print in EXPECTED: {missing}"
    assert names >= {*GATEWAY_STATE, *SHELL_STATE, *OWN_ACCOUNT}, "a name above is no example's any more"


def _parametrized() -> list[Any]:
    """One test per example, in two xdist groups (alternating, so each holds a share of the slow
    Python ones): each group starts the module's gateway once, on its worker."""
    chosen = [block for block in runnable() if block.name not in OWN_ACCOUNT]
    return [
        pytest.param(
            block,
            id=f"{block.page.relative_to(ROOT)}:{block.line}-{block.name}",
            marks=pytest.mark.xdist_group(f"readme-examples-{index % 2}"),
        )
        for index, block in enumerate(chosen)
    ]


@pytest.mark.parametrize("block", _parametrized())
def test_the_example_runs_as_written_on_the_shipped_configuration(readme: ReadmeShell, block: Block) -> None:
    assert block.name is not None
    if block.name in GATEWAY_STATE:
        output = readme.outputs[block.name]
    else:
        output = readme.run([*_prelude(block), block], readme.email)[block.name]
    _check(block.name, output, readme.directory)


@pytest.mark.xdist_group("readme-examples-limits")
def test_the_limits_examples_run_as_written_for_an_account_of_their_own(readme_gateway: ReadmeShell) -> None:
    blocks = runnable()
    [quickstart] = [block for block in blocks if block.name == "quickstart"]
    chosen = [block for block in blocks if block.name in OWN_ACCOUNT]
    assert [block.name for block in chosen] == list(OWN_ACCOUNT), "limits-worked builds on limits-cli"
    outputs = readme_gateway.run([quickstart, *_prelude(chosen[0]), *chosen], _new_email())
    for block in chosen:
        _check(str(block.name), outputs[str(block.name)], readme_gateway.directory)


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
