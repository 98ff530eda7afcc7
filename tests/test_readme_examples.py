"""The README's /v1 examples work as written, against a real gateway and the fake provider."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.gateway import TEST_JWT_SECRET, Gateway

ROOT = Path(__file__).resolve().parents[1]


def example(name: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- example:{name} -->\s*```\w+\n(.*?)```", readme, re.S)
    assert match, f"README has no example {name!r}"
    return match.group(1)


def test_the_curl_and_sdk_examples_run_as_written(gateway: Gateway, fake_provider: Any) -> None:
    script = example("curl") + "\nexport SB TOKEN\n" + f"{sys.executable} - <<'PY'\n{example('python')}PY\n"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "SB": gateway.url,
        "OPENAI_API_KEY": "sk-readme-example-key",
        "OPENAI_BASE_URL": f"{fake_provider.base_url}/v1",
        "SWITCHBOARD_JWT_SECRET": TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": gateway.settings.encryption_keys[0].kid
        + ":"
        + gateway.settings.encryption_keys[0].key.get_secret_value(),
        "SWITCHBOARD_DATA_DIR": str(gateway.settings.data_dir),
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert '"object":"chat.completion"' in done.stdout.replace(" ", "")
    assert "Hello from the fake provider." in done.stdout
    assert "sk-readme-example-key" not in done.stdout
