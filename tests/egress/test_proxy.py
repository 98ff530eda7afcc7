"""The egress proxy (SPEC §21): a real tinyproxy carries plain http and CONNECT tunnels to a TLS
provider signed by a test CA (SWITCHBOARD_CA_BUNDLE), for the gateway's own client and litellm's;
the gateway still refuses private targets before asking the proxy."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import openai
import orjson
import pytest

from switchboard.errors import SwitchboardError, UpstreamFailed, UpstreamForbidden
from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.egress import Egress
from switchboard.upstream.guard_sync import ALLOW_PRIVATE
from switchboard.upstream.litellm_clients import CALL_POOL, install
from switchboard.upstream.litellm_loader import litellm_module
from switchboard.upstream.proxy import EgressProxy, ProxyAddress, from_setting
from switchboard.upstream.types import UpstreamTarget
from tests.conftest import GatewayFactory
from tests.egress.conftest import TIMEOUTS
from tests.fakes.provider import FakeProvider
from tests.fakes.script import DEFAULT_REPLY
from tests.upstream.conftest import KEY, MESSAGES, unique
from tests.upstream.raw_server import RawProvider, answer, certificates

BODY = {"messages": MESSAGES, "max_tokens": 5}
KINDS = ["openai", "mistral"]  # the gateway's own HTTP/1.1 client; litellm on httpx
OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
COMPLETION = orjson.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
)


@dataclass
class TinyProxy:
    address: ProxyAddress
    log_file: Path

    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def tinyproxy(tmp_path: Path) -> Iterator[TinyProxy]:
    yield from _tinyproxy(tmp_path)


# tinyproxy takes only [A-Za-z0-9._-] in its config; the URL parsing test adds what must be encoded.
PROXY_USER, PROXY_PASSWORD = "gateway", "pr0xy-pass_w0rd." + os.urandom(6).hex()


@pytest.fixture
def tinyproxy_with_auth(tmp_path: Path) -> Iterator[TinyProxy]:
    """A tinyproxy that answers 407 unless given PROXY_USER and PROXY_PASSWORD (basic auth)."""
    yield from _tinyproxy(tmp_path, f"BasicAuth {PROXY_USER} {PROXY_PASSWORD}\n")


def _tinyproxy(tmp_path: Path, extra: str = "") -> Iterator[TinyProxy]:
    binary = shutil.which("tinyproxy") or next(
        (path for path in ("/usr/bin/tinyproxy", "/usr/sbin/tinyproxy") if os.path.exists(path)), None
    )
    if binary is None:
        pytest.fail(
            "tinyproxy is not installed (apt-get install -y tinyproxy); the egress proxy tests need it"
        )
    work = tmp_path / "tinyproxy"
    work.mkdir()
    work.chmod(0o777)  # run as root, tinyproxy drops to nobody, who still writes its log here
    port = _free_port()
    config = work / "tinyproxy.conf"
    config.write_text(
        f"Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 50\nLogLevel Info\n"
        f'LogFile "{work / "tinyproxy.log"}"\nPidFile "{work / "tinyproxy.pid"}"\n{extra}'
    )
    process = subprocess.Popen(
        [binary, "-d", "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"tinyproxy did not start: {process.stderr.read() if process.stderr else ''!r}")
            time.sleep(0.05)  # polling for the port, with the deadline above
    yield TinyProxy(ProxyAddress("127.0.0.1", port), work / "tinyproxy.log")
    process.terminate()
    process.wait(10)


async def until_logged(proxy: TinyProxy, text: str) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while text not in proxy.log():
        assert asyncio.get_running_loop().time() < deadline, f"{text!r} not in tinyproxy's log"
        await asyncio.sleep(0.02)


def client(proxy: TinyProxy, ca_bundle: Path | None = None) -> UpstreamClient:
    address = proxy.address
    return UpstreamClient(TIMEOUTS, Egress(EgressProxy(http=address, https=address), ca_bundle))


@pytest.mark.parametrize("kind", KINDS)
async def test_plain_http_goes_through_the_proxy(
    tinyproxy: TinyProxy, fake_provider: FakeProvider, kind: str
) -> None:
    upstream = client(tinyproxy)
    model = unique(kind)
    try:
        target = UpstreamTarget(kind, model, Secret(KEY), fake_provider.base_url + "/v1", allow_private=True)
        reply = await upstream.chat(target, BODY)
    finally:
        await upstream.aclose()
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == DEFAULT_REPLY
    [seen] = fake_provider.received(model)
    assert "tinyproxy" in seen.headers.get("via", "")  # the proxy forwarded it
    await until_logged(tinyproxy, "Request (file descriptor")


@pytest.mark.parametrize("kind", KINDS)
async def test_https_goes_through_a_connect_tunnel_trusting_the_ca_bundle(
    tinyproxy: TinyProxy, tmp_path: Path, kind: str
) -> None:
    certs = certificates(tmp_path)
    raw = RawProvider(answer(OK, COMPLETION), tls=certs.server)
    upstream = client(tinyproxy, certs.authority)
    try:
        async with raw.running() as base_url:
            reply = await upstream.chat(
                UpstreamTarget(kind, "m", Secret(KEY), base_url, allow_private=True), BODY
            )
    finally:
        await upstream.aclose()
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == "hi"
    assert len(raw.requests) == 1
    await until_logged(tinyproxy, f"CONNECT localhost:{base_url.split(':')[2].split('/')[0]}")


@pytest.mark.parametrize("kind", KINDS)
async def test_tls_through_the_tunnel_is_verified_without_the_bundle_it_fails(
    tinyproxy: TinyProxy, tmp_path: Path, kind: str
) -> None:
    certs = certificates(tmp_path)
    raw = RawProvider(answer(OK, COMPLETION), tls=certs.server)
    upstream = client(tinyproxy)
    try:
        async with raw.running() as base_url:
            with pytest.raises(UpstreamFailed):  # litellm reports it as the provider's 500
                await upstream.chat(
                    UpstreamTarget(kind, "m", Secret(KEY), base_url, allow_private=True), BODY
                )
    finally:
        await upstream.aclose()
    assert raw.requests == []


@pytest.mark.parametrize("kind", KINDS)
async def test_a_private_target_is_refused_before_the_proxy_is_asked(
    tinyproxy: TinyProxy, fake_provider: FakeProvider, kind: str
) -> None:
    upstream = client(tinyproxy)
    model = unique(kind)
    port = fake_provider.base_url.rsplit(":", 1)[1]
    try:
        with pytest.raises(UpstreamForbidden):
            target = UpstreamTarget(
                kind, model, Secret(KEY), f"http://localhost:{port}/v1", allow_private=False
            )
            await upstream.chat(target, BODY)
    finally:
        await upstream.aclose()
    assert fake_provider.received(model) == []
    assert "Request (file descriptor" not in tinyproxy.log()  # how tinyproxy logs each request it takes


def test_env_mode_takes_the_usual_variables_and_no_proxy() -> None:
    proxy = from_setting(
        "env",
        {
            "HTTPS_PROXY": "http://proxy.corp:3128",
            "http_proxy": "http://other:8080",
            "NO_PROXY": ".internal, api.local",
        },
    )
    assert proxy is not None
    assert proxy.for_origin(True, "api.openai.com") == ProxyAddress("proxy.corp", 3128)
    assert proxy.for_origin(False, "api.openai.com") == ProxyAddress("other", 8080)
    assert proxy.for_origin(True, "llm.internal") is None and proxy.for_origin(True, "api.local") is None
    assert from_setting("", {}) is None
    assert from_setting("env", {}) == EgressProxy()


@pytest.mark.parametrize(
    "value", ["http://proxy", "socks5://p:1", "http://proxy:1/path", "http://u%0a:pw@proxy:1"]
)
def test_a_proxy_setting_that_is_not_http_host_port_is_refused(value: str) -> None:
    with pytest.raises(ValueError):
        from_setting(value, {})


def test_an_https_proxy_url_is_refused_at_start_up_saying_so(tmp_path: Path) -> None:
    from switchboard.settings import SettingsError, load_settings

    env = {"SWITCHBOARD_DATA_DIR": str(tmp_path)}
    with pytest.raises(SettingsError, match=r"https:// egress proxy .* is not supported"):
        load_settings({**env, "SWITCHBOARD_EGRESS_PROXY": f"https://u:{PROXY_PASSWORD}@proxy:3128"})
    with pytest.raises(SettingsError) as refused:
        load_settings({**env, "SWITCHBOARD_EGRESS_PROXY": f"http://u:{PROXY_PASSWORD}@proxy:3128/x"})
    assert PROXY_PASSWORD not in str(refused.value)


def test_proxy_credentials_are_percent_decoded_and_never_shown() -> None:
    password = "p@ss:w%rd/" + PROXY_PASSWORD
    encoded = quote(password, safe="")
    proxy = from_setting(f"http://{PROXY_USER}:{encoded}@proxy.corp:3128", {})
    assert proxy is not None and proxy.https is not None
    assert (proxy.https.host, proxy.https.port, proxy.https.auth) == (
        "proxy.corp",
        3128,
        (PROXY_USER, password),
    )
    assert proxy.https.url == "http://proxy.corp:3128"
    for shown in (repr(proxy), str(proxy), repr(Egress(proxy))):
        assert PROXY_PASSWORD not in shown and encoded not in shown and PROXY_USER not in shown


def authenticated(proxy: TinyProxy, password: str = PROXY_PASSWORD) -> UpstreamClient:
    address = ProxyAddress(proxy.address.host, proxy.address.port, PROXY_USER, password)
    return UpstreamClient(TIMEOUTS, Egress(EgressProxy(http=address, https=address)))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_proxy_that_asks_for_basic_auth_carries_plain_http_with_the_credentials(
    tinyproxy_with_auth: TinyProxy, fake_provider: FakeProvider, kind: str
) -> None:
    model = unique(kind)
    target = UpstreamTarget(kind, model, Secret(KEY), fake_provider.base_url + "/v1", allow_private=True)
    upstream = authenticated(tinyproxy_with_auth)
    try:
        reply = await upstream.chat(target, BODY)
    finally:
        await upstream.aclose()
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == DEFAULT_REPLY
    [seen] = fake_provider.received(model)
    assert "tinyproxy" in seen.headers.get("via", "")
    assert "proxy-authorization" not in seen.headers  # the proxy's credentials stop at the proxy


@pytest.mark.parametrize("kind", KINDS)
async def test_a_proxy_that_asks_for_basic_auth_opens_a_connect_tunnel_with_the_credentials(
    tinyproxy_with_auth: TinyProxy, tmp_path: Path, kind: str
) -> None:
    certs = certificates(tmp_path)
    raw = RawProvider(answer(OK, COMPLETION), tls=certs.server)
    address = ProxyAddress(
        tinyproxy_with_auth.address.host, tinyproxy_with_auth.address.port, PROXY_USER, PROXY_PASSWORD
    )
    upstream = UpstreamClient(TIMEOUTS, Egress(EgressProxy(http=address, https=address), certs.authority))
    try:
        async with raw.running() as base_url:
            reply = await upstream.chat(
                UpstreamTarget(kind, "m", Secret(KEY), base_url, allow_private=True), BODY
            )
    finally:
        await upstream.aclose()
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == "hi"
    assert len(raw.requests) == 1 and b"proxy-authorization" not in raw.requests[0].lower()


@pytest.mark.parametrize("tls", [False, True])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_wrong_proxy_password_fails_the_call_without_showing_it(
    tinyproxy_with_auth: TinyProxy,
    fake_provider: FakeProvider,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    tls: bool,
) -> None:
    wrong = "wr0ng-" + PROXY_PASSWORD
    certs = certificates(tmp_path)
    raw = RawProvider(answer(OK, COMPLETION), tls=certs.server)
    address = ProxyAddress(
        tinyproxy_with_auth.address.host, tinyproxy_with_auth.address.port, PROXY_USER, wrong
    )
    upstream = UpstreamClient(TIMEOUTS, Egress(EgressProxy(http=address, https=address), certs.authority))
    model = unique(kind)
    caplog.set_level(logging.DEBUG)
    try:
        async with raw.running() as tls_url:
            base_url = tls_url if tls else fake_provider.base_url + "/v1"
            with pytest.raises(SwitchboardError) as failed:
                await upstream.chat(
                    UpstreamTarget(kind, model, Secret(KEY), base_url, allow_private=True), BODY
                )
    finally:
        await upstream.aclose()
    assert raw.requests == [] and fake_provider.received(model) == []
    shown = f"{failed.value!r} {failed.value} {caplog.text}"
    assert wrong not in shown and quote(wrong, safe="") not in shown


def test_a_gateway_sends_through_an_authenticating_proxy_and_never_shows_its_password(
    make_gateway: GatewayFactory, tinyproxy_with_auth: TinyProxy, fake_provider: FakeProvider
) -> None:
    address = tinyproxy_with_auth.address
    setting = f"http://{PROXY_USER}:{PROXY_PASSWORD}@{address.host}:{address.port}"
    gateway = make_gateway(env={"SWITCHBOARD_EGRESS_PROXY": setting, "SWITCHBOARD_LOG_LEVEL": "DEBUG"})
    kept = _Everything()  # added after the start, which sets up the gateway's own logging
    logger = logging.getLogger("switchboard")
    logger.addHandler(kept)
    try:
        user = gateway.user()
        credential = {"provider": "openai", "secret": KEY, "base_url": fake_provider.base_url + "/v1"}
        assert user.client.post("/llm-credentials", json=credential).status_code == 201
        sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0, timeout=30)
        model = unique("gpt-4o-mini")
        answer = sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES)  # type: ignore[arg-type]
        stream = sdk.chat.completions.create(model=f"openai/{model}", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        metrics = gateway.user(role="Admin").client.get("/metrics").text
    finally:
        logger.removeHandler(kept)
    assert answer.choices[0].message.content == streamed == DEFAULT_REPLY
    seen = fake_provider.received(model)
    assert len(seen) == 2 and all("tinyproxy" in r.headers.get("via", "") for r in seen)
    assert kept.messages and PROXY_PASSWORD not in "\n".join(kept.messages) + metrics


class _Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(self.format(record))


async def test_litellms_side_calls_go_through_the_proxy_of_the_client_whose_call_makes_them(
    tinyproxy: TinyProxy,
) -> None:
    """litellm's module-level clients (ollama's /api/show, lemonade's lookup) are process-wide; each
    side call goes out with the egress settings of the UpstreamClient whose call makes it, not those
    of whichever client was built last."""
    litellm = await litellm_module()
    proxied, direct = client(tinyproxy), UpstreamClient(TIMEOUTS)
    raw = RawProvider(answer(OK, COMPLETION))

    def side_call(upstream: UpstreamClient, url: str) -> int:
        # What litellm does inside a call: a blocking request on its module-level client.
        pool, policy = CALL_POOL.set(upstream.pool), ALLOW_PRIVATE.set(True)
        try:
            return int(litellm.module_level_client.get(url).status_code)
        finally:
            CALL_POOL.reset(pool)
            ALLOW_PRIVATE.reset(policy)

    try:
        async with raw.running() as base_url:
            for upstream in (proxied, direct):  # the direct client's clients are installed last
                install(litellm, upstream.pool)
            assert await asyncio.to_thread(side_call, proxied, base_url + "/models/a") == 200
            assert await asyncio.to_thread(side_call, direct, base_url + "/models/b") == 200
    finally:
        await proxied.aclose()
        await direct.aclose()
    by_path = {head.split(b" ")[1]: head.lower() for head in raw.requests}
    assert b"tinyproxy" in by_path[b"/v1/models/a"]
    assert b"tinyproxy" not in by_path[b"/v1/models/b"]
