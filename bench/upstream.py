"""The fixed-answer OpenAI-format upstream: nginx with a generated config, run in the foreground."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench import payloads
from bench.processes import BenchError, Child

_CONF = """\
worker_processes 1;
daemon off;
master_process on;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {work}/nginx-tmp/body;
  proxy_temp_path {work}/nginx-tmp/proxy;
  fastcgi_temp_path {work}/nginx-tmp/fastcgi;
  uwsgi_temp_path {work}/nginx-tmp/uwsgi;
  scgi_temp_path {work}/nginx-tmp/scgi;
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  server_tokens off;
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location = /json/v1/chat/completions {{
      default_type application/json;
{json}
    }}
    location = /stream/v1/chat/completions {{
      default_type text/event-stream;
      add_header Cache-Control no-cache;
{sse}
    }}
{providers}
    location / {{ return 404; }}
  }}
}}
"""


def _nginx_quote(text: str) -> str:
    # Inside a single-quoted nginx string: escape backslash and quote, spell newlines as \n.
    return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")


def _return_text(name: str, text: str, piece: int = 3000) -> str:
    """`return 200 '…'` for a body longer than nginx's 4 KiB token limit: pieces in variables."""
    parts = [text[i : i + piece] for i in range(0, len(text), piece)]
    sets = "".join(f"      set ${name}{i} '{_nginx_quote(p)}';\n" for i, p in enumerate(parts))
    joined = "".join(f"${name}{i}" for i in range(len(parts)))
    return f'{sets}      return 200 "{joined}";'


def find_nginx() -> str:
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and Path(candidate).exists():
            return candidate
    raise BenchError("nginx is not installed (bench/run installs it with apt-get)")


_LOCATION = """\
    location = {path} {{
      default_type {content_type};
{body}
    }}
"""


def _provider_locations() -> str:
    """Anthropic's and Gemini's answers, for the adapters' rows: `/json/…` and `/stream/…` as for OpenAI."""
    sse = "text/event-stream"
    gemini = f"/v1beta/models/{payloads.GEMINI_MODEL}"
    answers = [
        ("/json/v1/messages", "application/json", payloads.anthropic_json()),
        ("/stream/v1/messages", sse, "".join(e + "\n\n" for e in payloads.anthropic_events())),
        (f"/json{gemini}:generateContent", "application/json", payloads.gemini_json()),
        (
            f"/stream{gemini}:streamGenerateContent",
            sse,
            "".join(e + "\r\n\r\n" for e in payloads.gemini_events()),
        ),
    ]
    return "".join(
        _LOCATION.format(path=path, content_type=kind, body=_return_text(f"p{i}_", text))
        for i, (path, kind, text) in enumerate(answers)
    )


def write_config(work: Path, port: int) -> Path:
    (work / "nginx-tmp").mkdir(parents=True, exist_ok=True)
    sse = "".join(line + "\n\n" for line in payloads.stream_events())
    conf = work / "nginx.conf"
    conf.write_text(
        _CONF.format(
            work=work,
            port=port,
            json=_return_text("json", payloads.completion_json()),
            sse=_return_text("sse", sse),
            providers=_provider_locations(),
        )
    )
    return conf


class Upstream:
    """nginx answering `POST …/json/v1/chat/completions` and `POST …/stream/v1/chat/completions`."""

    def __init__(self, work: Path, port: int) -> None:
        work = work.resolve()
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        conf = write_config(work, port)
        nginx = find_nginx()
        argv = [nginx, "-p", str(work), "-e", str(work / "nginx-error.log"), "-c", str(conf)]
        self.child = Child("nginx", argv, work / "nginx.out")
        self.child.wait_port(port, timeout=10)

    @property
    def json_base_url(self) -> str:
        return f"{self.base}/json/v1"

    @property
    def stream_base_url(self) -> str:
        return f"{self.base}/stream/v1"

    def base_url(self, provider: str, mode: str) -> str:
        """A credential's base_url for `provider`'s `mode` ("json" or "stream") answer."""
        if provider == "openai":
            return self.json_base_url if mode == "json" else self.stream_base_url
        return f"{self.base}/{mode}"  # the adapters add /v1/messages or /v1beta/models/…

    def stop(self) -> None:
        self.child.stop(grace=5)
