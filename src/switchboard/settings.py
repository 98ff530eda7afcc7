"""Settings: the only reader of the environment and of the config file (SPEC §1)."""

from __future__ import annotations

import base64
import logging
import os
import secrets
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import SecretStr

from switchboard.config_file import GatewayConfig, load_config
from switchboard.sso import config as oidc_config
from switchboard.upstream import private_defaults, proxy

log = logging.getLogger("switchboard.settings")

MIN_SECRET_BYTES = 32
PREFIX = "SWITCHBOARD_"


class SettingsError(Exception):
    """The gateway cannot start with these settings."""


@dataclass(frozen=True)
class EncryptionKey:
    kid: str
    key: SecretStr  # base64 of 32 bytes

    def raw(self) -> bytes:
        return base64.b64decode(self.key.get_secret_value())


@dataclass(frozen=True)
class Settings:
    environment: Literal["development", "production"] = "development"
    data_dir: Path = Path("var")
    database_url: str = ""
    jwt_secret: SecretStr = field(default_factory=lambda: SecretStr(""))
    jwt_audience: str = "svc-agents"
    jwt_leeway_seconds: int = 30
    encryption_keys: tuple[EncryptionKey, ...] = ()
    config_path: Path | None = None
    config: GatewayConfig = field(default_factory=GatewayConfig)
    public_url: str = "http://localhost:8000"
    auth_url: str = "http://localhost:8000"
    allow_private_upstreams: bool = False
    # SPEC §24: single sign-on with this OpenID issuer (SWITCHBOARD_OIDC_*); None: off.
    oidc: oidc_config.OidcSettings | None = None
    # SPEC §21: the proxy all provider traffic goes through (None: direct), and extra trusted roots.
    egress_proxy: proxy.EgressProxy | None = None
    ca_bundle: Path | None = None
    max_body_bytes: int = 20 * 1024 * 1024
    max_upstream_response_bytes: int = 8 * 1024 * 1024  # a non-streamed or inflated answer; over → 502
    head_timeout_seconds: float = 15.0  # to send a complete request head, else the connection closes
    body_idle_timeout_seconds: float = 15.0  # a request body making no progress this long → 408, closed
    body_timeout_seconds: float = 60.0  # a request body not complete this long after its head → 408
    max_head_bytes: int = 64 * 1024  # request line and headers; over it → 431
    max_header_line_bytes: int = 1024 * 1024
    max_header_lines: int = 200
    cors_origins: tuple[str, ...] = ()  # browser origins allowed to call /v1; ("*",) for any
    log_format: Literal["text", "json"] = "text"
    log_level: str = "INFO"
    # A bearer good for GET /metrics only (SPEC §17); None: there is none.
    metrics_token: SecretStr | None = None
    # The OTLP/HTTP traces URL from the standard OTEL_* variables; "": tracing off.
    otel_traces_endpoint: str = ""
    otel_service_name: str = "switchboard"
    upstream_connect_timeout: float = 10.0
    upstream_first_byte_timeout: float = 120.0
    upstream_idle_timeout: float = 60.0
    idempotency_ttl_seconds: int = 24 * 3600
    # PostgreSQL connections one process opens at most, never more (db/engine.DEFAULT_POOL_SIZE):
    # processes x this <= the server's max_connections - a reserve (docs/postgres-connections.md).
    database_pool_size: int = 10
    # A running call renews its idempotency claim and limit holds every third of this; a dead
    # replica's are recovered (an `abandoned` record, the key and the reservation freed) once it ends.
    lease_seconds: float = 30.0
    # Per-process allowances of the limits (limits/allowances.py): calls admitted in memory on slots
    # granted in the background. Off by default: they trade two of SPEC §13's promises for speed
    # (docs/limits.md, "Allowances").
    limit_allowances: bool = True
    usage_queue_size: int = 10_000
    # A failed webhook delivery is tried again after this many seconds, then doubling (SPEC §22: ≤ 30).
    webhook_first_retry_seconds: float = 10.0
    # The response cache's bound on its stored (sealed) entries; past it the oldest go (SPEC §23).
    cache_max_mb: float = 256.0
    # Raw usage records older than this many days are deleted (hourly rollups kept); None keeps all.
    usage_retention_days: int | None = None
    # Audit events older than this many whole days are purged (a purge event stays); None keeps all.
    audit_retention_days: int | None = None
    migrate_on_start: bool = True
    debug: bool = False
    # Set by `switchboard serve` for its workers, so that their ready line says where they listen.
    listen_url: str = ""
    git_sha: str = "unknown"
    built_at: str = ""

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def _cache_max_mb(value: float) -> float:
    if not value > 0:
        raise SettingsError("SWITCHBOARD_CACHE_MAX_MB must be a number above 0")
    return value


def _pool_size(value: float) -> int:
    # Below 2 the limits ledger's kept connection and a request session would wait on each other.
    if value < 2 or value != int(value):
        raise SettingsError(f"{PREFIX}DATABASE_POOL_SIZE must be a whole number of at least 2")
    return int(value)


def _bool(value: str | None, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _read_or_create_secret(path: Path, make: str, variable: str, generate: bool) -> str:
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    if not generate:
        # Only `serve` creates secrets: a verb run elsewhere would otherwise mint tokens and keys
        # under a fresh secret that the running gateway has never seen.
        raise SettingsError(
            f"no development secret at {path.resolve()}: run this where `switchboard serve` runs "
            f"(it keeps ./var there), or set SWITCHBOARD_DATA_DIR to its data directory (or {variable})"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(make)
    log.warning(
        "GENERATED a development secret at %s (mode 0600). Set SWITCHBOARD_JWT_SECRET and "
        "SWITCHBOARD_ENCRYPTION_KEYS and SWITCHBOARD_ENV=production for a real deployment.",
        path,
    )
    return make


def parse_encryption_keys(spec: str) -> tuple[EncryptionKey, ...]:
    keys: list[EncryptionKey] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        kid, sep, b64 = item.partition(":")
        if not sep or not kid:
            raise SettingsError("SWITCHBOARD_ENCRYPTION_KEYS is a list of kid:base64key")
        try:
            raw = base64.b64decode(b64, validate=True)
        except ValueError:
            raise SettingsError(f"encryption key {kid!r} is not valid base64") from None
        if len(raw) != 32:
            raise SettingsError(f"encryption key {kid!r} must be 32 bytes (AES-256)")
        keys.append(EncryptionKey(kid=kid, key=SecretStr(b64)))
    if len({k.kid for k in keys}) != len(keys):
        raise SettingsError("encryption key ids must be unique")
    return tuple(keys)


def _baked_build_info() -> list[str]:
    """`<git sha> [<built at>]`, written by the Docker build into the package."""
    baked = Path(__file__).with_name("_build_info.txt")
    return baked.read_text(encoding="utf-8").split() if baked.exists() else []


def _built_at(env: Mapping[str, str]) -> str:
    baked = _baked_build_info()
    if env.get(f"{PREFIX}BUILT_AT"):
        return env[f"{PREFIX}BUILT_AT"]
    if len(baked) > 1:
        return baked[1]
    # Not a packaged build: the time the package was installed (or checked out) is the best we know.
    installed = datetime.fromtimestamp(Path(__file__).stat().st_mtime, UTC)
    return installed.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _git_sha(env: Mapping[str, str]) -> str:
    if env.get(f"{PREFIX}GIT_SHA"):
        return env[f"{PREFIX}GIT_SHA"]
    baked = _baked_build_info()
    if baked and baked[0] != "unknown":
        return baked[0]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def parse_cors_origins(spec: str) -> tuple[str, ...]:
    """`*`, or comma-separated origins such as `https://app.example.com,http://localhost:3000`."""
    origins = tuple(part.strip().rstrip("/") for part in spec.split(",") if part.strip())
    for origin in origins:
        scheme, sep, host = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not sep or not host or "/" in host):
            raise SettingsError(
                f"SWITCHBOARD_CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port]) or *"
            )
    return origins


def _first_retry(seconds: float) -> float:
    if not 0 < seconds <= 30:
        raise SettingsError("SWITCHBOARD_WEBHOOK_FIRST_RETRY_SECONDS must be over 0 and at most 30")
    return seconds


def _retention_days(raw: str | None, name: str = "USAGE_RETENTION_DAYS") -> int | None:
    if raw is None or raw.strip() in ("", "0"):
        return None
    try:
        days = int(raw)
    except ValueError:
        days = 0
    if days < 1:
        raise SettingsError(f"{PREFIX}{name} is a whole number of days (0 or unset: keep all)")
    return days


def _otel_traces_endpoint(env: Mapping[str, str]) -> str:
    """OpenTelemetry's own variables: traces go over OTLP/HTTP when an endpoint is set (or
    OTEL_TRACES_EXPORTER=otlp asks for the default one), unless the SDK or the exporter is off."""
    exporter = (env.get("OTEL_TRACES_EXPORTER") or "").strip().lower()
    if _bool(env.get("OTEL_SDK_DISABLED")) or exporter == "none":
        return ""
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    traces = (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip()
    base = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip().rstrip("/")
    if not traces and not base and exporter != "otlp":
        return ""
    if exporter not in ("", "otlp"):
        raise SettingsError("OTEL_TRACES_EXPORTER: switchboard exports traces with otlp (or none)")
    if protocol not in (None, "", "http/protobuf"):
        raise SettingsError("OTEL_EXPORTER_OTLP_PROTOCOL: switchboard sends traces as http/protobuf")
    return traces or f"{base or 'http://localhost:4318'}/v1/traces"


def load_settings(env: Mapping[str, str] | None = None, *, generate_secrets: bool = True) -> Settings:
    """`generate_secrets=False` (every CLI verb but `serve`) refuses instead of creating dev secrets."""
    env = os.environ if env is None else env

    def get(name: str, default: str | None = None) -> str | None:
        value = env.get(PREFIX + name)
        return value if value not in (None, "") else default

    environment = get("ENV", "development")
    if environment not in ("development", "production"):
        raise SettingsError("SWITCHBOARD_ENV is development or production")
    data_dir = Path(get("DATA_DIR", "var") or "var")
    dev = environment == "development"

    jwt_secret = get("JWT_SECRET")
    if jwt_secret is None and dev:
        jwt_secret = _read_or_create_secret(
            data_dir / "jwt_secret", secrets.token_urlsafe(48), f"{PREFIX}JWT_SECRET", generate_secrets
        )
    if jwt_secret is None or len(jwt_secret.encode()) < MIN_SECRET_BYTES:
        raise SettingsError(f"SWITCHBOARD_JWT_SECRET must be set and at least {MIN_SECRET_BYTES} bytes")

    key_spec = get("ENCRYPTION_KEYS")
    if key_spec is None and dev:
        fresh = "dev1:" + base64.b64encode(secrets.token_bytes(32)).decode()
        key_spec = _read_or_create_secret(
            data_dir / "encryption_keys", fresh, f"{PREFIX}ENCRYPTION_KEYS", generate_secrets
        )
    if key_spec is None:
        raise SettingsError("SWITCHBOARD_ENCRYPTION_KEYS must be set outside development")
    keys = parse_encryption_keys(key_spec)
    if not keys:
        raise SettingsError("SWITCHBOARD_ENCRYPTION_KEYS holds no key")

    default_db = f"sqlite+aiosqlite:///{(data_dir / 'switchboard.db').as_posix()}"
    config_path_text = get("CONFIG")
    config_path = Path(config_path_text) if config_path_text else Path("config/switchboard.yaml")
    if config_path_text and not config_path.exists():
        raise SettingsError(f"SWITCHBOARD_CONFIG names {config_path}, which does not exist")

    def number(name: str, default: float) -> float:
        raw = get(name)
        try:
            return float(raw) if raw is not None else default
        except ValueError:
            raise SettingsError(f"{PREFIX}{name} must be a number") from None

    config = load_config(config_path)
    allow_private = _bool(get("ALLOW_PRIVATE_UPSTREAMS"))
    for entry in config.deployment_credentials:
        problem = private_defaults.refusal(entry.provider, entry.base_url, allow_private)
        if problem is not None:
            raise SettingsError(f"deployment_credentials: {problem}")
    try:
        egress_proxy = proxy.from_setting(get("EGRESS_PROXY", "") or "", env)
    except ValueError as exc:
        raise SettingsError(f"SWITCHBOARD_EGRESS_PROXY: {exc}") from None
    ca_bundle = Path(bundle) if (bundle := get("CA_BUNDLE")) else None
    if ca_bundle is not None and not ca_bundle.is_file():
        raise SettingsError(f"SWITCHBOARD_CA_BUNDLE names {ca_bundle}, which is not a file")

    public_url = (get("PUBLIC_URL", "http://localhost:8000") or "").rstrip("/")
    try:
        oidc = oidc_config.from_env(get)
    except oidc_config.OidcConfigError as exc:
        raise SettingsError(f"{PREFIX}OIDC_{exc}") from None
    log_format = get("LOG_FORMAT", "text")
    if log_format not in ("text", "json"):
        raise SettingsError("SWITCHBOARD_LOG_FORMAT is text or json")
    return Settings(
        environment=environment,  # type: ignore[arg-type]
        data_dir=data_dir,
        database_url=get("DATABASE_URL", default_db) or default_db,
        jwt_secret=SecretStr(jwt_secret),
        jwt_audience=get("JWT_AUDIENCE", "svc-agents") or "svc-agents",
        encryption_keys=keys,
        config_path=config_path,
        config=config,
        public_url=public_url,
        auth_url=(get("AUTH_URL", public_url) or public_url).rstrip("/"),
        allow_private_upstreams=allow_private,
        oidc=oidc,
        egress_proxy=egress_proxy,
        ca_bundle=ca_bundle,
        max_body_bytes=int(number("MAX_BODY_BYTES", 20 * 1024 * 1024)),
        max_upstream_response_bytes=int(number("MAX_UPSTREAM_RESPONSE_BYTES", 8 * 1024 * 1024)),
        head_timeout_seconds=number("HEAD_TIMEOUT_SECONDS", 15.0),
        body_idle_timeout_seconds=number("BODY_IDLE_TIMEOUT_SECONDS", 15.0),
        body_timeout_seconds=number("BODY_TIMEOUT_SECONDS", 60.0),
        max_head_bytes=int(number("MAX_HEAD_BYTES", 64 * 1024)),
        max_header_line_bytes=int(number("MAX_HEADER_LINE_BYTES", 1024 * 1024)),
        max_header_lines=int(number("MAX_HEADER_LINES", 200)),
        cors_origins=parse_cors_origins(get("CORS_ORIGINS", "") or ""),
        log_format=log_format,  # type: ignore[arg-type]
        log_level=(get("LOG_LEVEL", "INFO") or "INFO").upper(),
        metrics_token=SecretStr(metrics_token) if (metrics_token := get("METRICS_TOKEN")) else None,
        otel_traces_endpoint=_otel_traces_endpoint(env),
        otel_service_name=(env.get("OTEL_SERVICE_NAME") or "").strip() or "switchboard",
        upstream_connect_timeout=number("UPSTREAM_CONNECT_TIMEOUT", 10.0),
        upstream_first_byte_timeout=number("UPSTREAM_FIRST_BYTE_TIMEOUT", 120.0),
        upstream_idle_timeout=number("UPSTREAM_IDLE_TIMEOUT", 60.0),
        idempotency_ttl_seconds=int(number("IDEMPOTENCY_TTL_SECONDS", 24 * 3600)),
        lease_seconds=number("LEASE_SECONDS", 30.0),
        limit_allowances=_bool(get("LIMIT_ALLOWANCES"), default=True),
        database_pool_size=_pool_size(number("DATABASE_POOL_SIZE", 10)),
        usage_queue_size=int(number("USAGE_QUEUE_SIZE", 10_000)),
        webhook_first_retry_seconds=_first_retry(number("WEBHOOK_FIRST_RETRY_SECONDS", 10.0)),
        cache_max_mb=_cache_max_mb(number("CACHE_MAX_MB", 256.0)),
        usage_retention_days=_retention_days(get("USAGE_RETENTION_DAYS")),
        audit_retention_days=_retention_days(get("AUDIT_RETENTION_DAYS"), "AUDIT_RETENTION_DAYS"),
        migrate_on_start=_bool(get("MIGRATE_ON_START"), default=True),
        debug=_bool(get("DEBUG")),
        listen_url=get("LISTEN_URL", "") or "",
        git_sha=_git_sha(env),
        built_at=_built_at(env),
    )
