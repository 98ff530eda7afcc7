"""The README's quick start and client examples run as written, against a gateway and the fake provider."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from tests.support.gateway import Gateway

ROOT = Path(__file__).resolve().parents[1]
README_ADDRESS = "http://127.0.0.1:8000"


def example(name: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- example:{name} -->\s*```\w+\n(.*?)```", readme, re.S)
    assert match, f"README has no example {name!r}"
    return match.group(1)


def test_the_quick_start_and_client_examples_run_as_written(gateway: Gateway, fake_provider: Any) -> None:
    # Each run needs an email of its own; the test gateway answers on its own port, not on 8000.
    email = f"me-{uuid.uuid4().hex[:10]}@example.com"
    script = (
        example("quickstart").replace("me@example.com", email)
        + example("curl")
        + f"{sys.executable} - <<'PY'\n{example('python')}PY\n"
    ).replace(README_ADDRESS, gateway.url)
    key = gateway.settings.encryption_keys[0]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "OPENAI_API_KEY": "sk-readme-example-key",
        "OPENAI_BASE_URL": f"{fake_provider.base_url}/v1",
        # What `scripts/serve` leaves in ./var, for the test gateway's data directory.
        "SWITCHBOARD_JWT_SECRET": gateway.settings.jwt_secret.get_secret_value(),
        "SWITCHBOARD_ENCRYPTION_KEYS": f"{key.kid}:{key.key.get_secret_value()}",
        "SWITCHBOARD_DATA_DIR": str(gateway.settings.data_dir),
        "SWITCHBOARD_DATABASE_URL": gateway.settings.database_url,
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.replace(" ", "")
    assert '"provider":"openai"' in out  # step 4 stored the credential
    assert "data:[DONE]" in out and '"object":"chat.completion.chunk"' in out  # step 5 streamed
    assert '"object":"chat.completion"' in out  # the curl example
    assert "Hello from the fake provider." in done.stdout  # the Python example
    assert "sk-readme-example-key" not in done.stdout
    assert "svc_api_" not in done.stdout  # the key went into the variable, not to the screen
