"""An OpenAI-format call through the whole gateway never imports litellm (SPEC §5, STYLE rule 9)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.databases import DatabaseFactory

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys, uuid, httpx
    from pathlib import Path
    from tests.conftest import default_test_config
    from tests.fakes.provider import FakeProvider
    from tests.support.gateway import build_settings, start_gateway, write_config
    from tests.support.servers import ServerThread

    data = Path(sys.argv[1]); db_url = sys.argv[2]
    provider = FakeProvider()
    fake = ServerThread(provider.app, name="fake").start()
    provider.base_url = fake.url
    gateway = start_gateway(build_settings(data, db_url, write_config(data, default_test_config(fake.url))))
    user = gateway.user()
    created = user.client.post("/llm-credentials", json={
        "provider": "openai", "secret": "sk-" + uuid.uuid4().hex, "base_url": fake.url + "/v1"})
    assert created.status_code == 201, created.text
    for model, stream in (("openai/gpt-4o-mini", False), ("openai/unlisted-model", True), ("default", False)):
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
        answer = user.client.post("/v1/chat/completions", json=body)
        assert answer.status_code == 200, answer.text
    assert user.client.get("/v1/models").status_code == 200
    loaded = sorted(name for name in sys.modules if name == "litellm" or name.startswith("litellm."))
    gateway.stop(); fake.stop()
    print("LITELLM_MODULES", len(loaded))
    """
)


def test_openai_format_calls_never_import_litellm(tmp_path: Path, databases: DatabaseFactory) -> None:
    import asyncio

    db_url = asyncio.run(databases.create())
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), db_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "LITELLM_MODULES 0" in done.stdout
