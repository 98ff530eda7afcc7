"""The `switchboard` command: serve, token, db, keys, usage, limits, audit, user, key."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import uuid
from collections.abc import Sequence

from switchboard import API_VERSION
from switchboard.config_file import ConfigError
from switchboard.settings import SettingsError, load_settings
from switchboard.startup_errors import check_database, explain

ROLE_CHOICES = ["SuperAdmin", "Admin", "Manager", "Operator", "User", "Viewer", "ApiClient"]
# Verbs that work without the database; every other one checks it can open it first.
WITHOUT_DATABASE = {"serve", "token"}


def _workers(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError("--workers is a number of processes, at least 1")
    return int(value)


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a UUID") from None


def _ttl(value: str) -> int:
    from switchboard.auth.tokens import MAX_LIFETIME_SECONDS

    if not value.isdigit() or not 1 <= int(value) <= MAX_LIFETIME_SECONDS:
        raise argparse.ArgumentTypeError(f"--ttl is a number of seconds from 1 to {MAX_LIFETIME_SECONDS}")
    return int(value)


def _cmd_token(args: argparse.Namespace) -> int:
    from switchboard.auth.tokens import TokenCodec

    if args.scope and not args.acting_as:
        print("switchboard: --scope needs --acting-as ROOM (it limits a delegation token)", file=sys.stderr)
        return 2
    settings = load_settings(generate_secrets=False)
    codec = TokenCodec(settings.jwt_secret.get_secret_value(), settings.jwt_audience)
    extra: dict[str, object] = {}
    if args.acting_as:
        extra.update(
            auth_method="delegation",
            acting_as=str(args.acting_as),
            delegation_scope=args.scope or ["read"],
            delegation_token_id=str(uuid.uuid4()),
        )
    if args.sub is None:
        args.sub = uuid.uuid4()
        # Each random sub is another user, with none of the first one's credentials or usage.
        print(
            f"switchboard: a new user {args.sub}; pass --sub {args.sub} for more tokens of it",
            file=sys.stderr,
        )
    token = codec.mint(
        sub=args.sub,
        role=args.role,
        permissions=args.permission if args.permission else None,
        email=args.email,
        ttl_seconds=args.ttl,
        extra=extra,
    )
    print(token)
    return 0


def _cmd_db_upgrade(_args: argparse.Namespace) -> int:
    from switchboard.db.engine import make_engine
    from switchboard.db.migrate import MigrationError, upgrade

    settings = load_settings(generate_secrets=False)

    async def run() -> None:
        engine = make_engine(settings.database_url)
        try:
            await upgrade(engine)
        finally:
            await engine.dispose()

    try:
        asyncio.run(run())
    except MigrationError as exc:
        print(f"switchboard: {exc}", file=sys.stderr)
        return 1
    print("database is at the latest migration")
    return 0


def _delegate(module: str, function: str) -> object:
    def run(args: argparse.Namespace) -> int:
        handler = getattr(importlib.import_module(module), function)
        return int(handler(args))

    return run


def _audit_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # The handlers are imported only when their verb runs: switchboard.audit.audit_cli pulls in
    # SQLAlchemy and FastAPI, which every other verb (and `--help`) would otherwise pay for.
    audit = sub.add_parser("audit", help="the audit trail")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    check = audit_sub.add_parser("verify", help="check the hash chain; exit 1 naming the first bad event")
    check.set_defaults(handler=_delegate("switchboard.audit.audit_cli", "run_verify"))
    export = audit_sub.add_parser("export", help="write audit events out, oldest first")
    export.add_argument("--from", dest="from_", help="RFC 3339 timestamp or date")
    export.add_argument("--to", help="RFC 3339 timestamp or date")
    export.add_argument("--format", choices=["csv", "ndjson"], default="ndjson")
    export.add_argument("--output", help="file to write; standard output when omitted")
    export.set_defaults(handler=_delegate("switchboard.audit.audit_cli", "run_export"))
    purge = audit_sub.add_parser("purge", help="purge whole days past retention, leaving a purge event")
    purge.add_argument(
        "--days", type=int, help="keep this many days (default SWITCHBOARD_AUDIT_RETENTION_DAYS)"
    )
    purge.set_defaults(handler=_delegate("switchboard.audit.audit_cli", "run_purge"))


def _limits_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from switchboard.limits.rules import METRICS, SUBJECT_TYPES, WINDOWS

    limits = sub.add_parser("limits", help="spend and rate limits")
    limits_sub = limits.add_subparsers(dest="limits_command", required=True)
    handler = _delegate("switchboard.limits.limits_cli", "run")
    listing = limits_sub.add_parser("list", help="every limit, oldest first")
    listing.add_argument("--subject-type", choices=SUBJECT_TYPES)
    listing.add_argument(
        "--subject-id", help="with --subject-type; economies by id or slug, users by id or email"
    )
    listing.set_defaults(handler=handler)
    put = limits_sub.add_parser(
        "set", help="create a limit, or change the one of the same subject/metric/window"
    )
    put.add_argument("--subject-type", required=True, choices=SUBJECT_TYPES)
    put.add_argument("--subject-id", required=True, help="an economy by id or slug, a user by id or email")
    put.add_argument(
        "--economy", help="narrow a user, room, agent or api_key limit to an economy (id or slug)"
    )
    put.add_argument("--metric", required=True, choices=METRICS)
    put.add_argument("--window", required=True, choices=WINDOWS)
    put.add_argument("--amount", required=True, help="a whole number: nano-units of cost, requests or tokens")
    put.add_argument("--allow-unpriced", action="store_true", help="let unpriced models through a cost limit")
    put.set_defaults(handler=handler)
    status = limits_sub.add_parser("status", help="what a limit has used, holds and has left")
    status.add_argument("limit_id", metavar="ID")
    status.set_defaults(handler=handler)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="switchboard", description="OpenAI-compatible LLM gateway")
    parser.add_argument("--version", action="version", version=f"switchboard {API_VERSION}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of a failure")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve",
        help="start the gateway",
        description=(
            "Start the gateway. Settings come from SWITCHBOARD_* variables (see docs/configuration.md)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (0.0.0.0 for every interface)"
    )
    serve.add_argument("--port", type=int, default=8000, help="TCP port to listen on")
    serve.add_argument("--workers", type=_workers, default=1, help="worker processes sharing the port")
    serve.set_defaults(handler=_delegate("switchboard.serving.serve_cli", "run"))

    token = sub.add_parser("token", help="mint a JWT with the configured secret")
    token.add_argument("--sub", type=_uuid, help="user id (UUID); random when omitted")
    token.add_argument("--role", default="User", choices=ROLE_CHOICES)
    token.add_argument("--email")
    token.add_argument("--permission", action="append", help="repeatable; role defaults when omitted")
    token.add_argument("--acting-as", type=_uuid, help="room id: mint a delegation token for that room")
    token.add_argument(
        "--scope",
        action="append",
        choices=["read", "write", "manage"],
        help="repeatable; delegation scope (default read)",
    )
    token.add_argument("--ttl", type=_ttl, default=900, help="lifetime in seconds")
    token.set_defaults(handler=_cmd_token)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="apply migrations").set_defaults(handler=_cmd_db_upgrade)

    keys = sub.add_parser("keys", help="encryption keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    rotate = keys_sub.add_parser("rotate", help="re-encrypt every credential under the active key")
    rotate.add_argument("--batch-size", type=int, default=100)
    rotate.set_defaults(handler=_delegate("switchboard.keys_rotation_cli", "run"))

    usage = sub.add_parser("usage", help="usage records")
    usage_sub = usage.add_subparsers(dest="usage_command", required=True)
    export = usage_sub.add_parser("export", help="export an economy's usage records")
    export.add_argument("--economy", required=True, help="economy id or slug")
    export.add_argument("--from", dest="from_", help="RFC 3339 timestamp or date")
    export.add_argument("--to", help="RFC 3339 timestamp or date")
    export.add_argument("--format", choices=["csv", "ndjson"], default="csv")
    export.add_argument("--output", help="file to write; standard output when omitted")
    export.set_defaults(handler=_delegate("switchboard.metering.export_cli", "run"))
    verify = usage_sub.add_parser(
        "verify", help="compare the hourly rollups with the records; exit 1 when they differ"
    )
    verify.add_argument("--economy", help="economy id or slug; every economy when omitted")
    verify.add_argument("--from", dest="from_", help="RFC 3339 timestamp or date (rounded down to the hour)")
    verify.add_argument("--to", help="RFC 3339 timestamp or date (rounded up to the hour)")
    verify.add_argument(
        "--repair", action="store_true", help="rebuild the differing days' rollups from their records"
    )
    verify.set_defaults(handler=_delegate("switchboard.metering.verify_cli", "run"))
    purge = usage_sub.add_parser(
        "purge", help="delete records older than the retention (rollups kept; see docs/billing.md)"
    )
    purge.add_argument(
        "--days", type=int, help="keep this many days of records (default SWITCHBOARD_USAGE_RETENTION_DAYS)"
    )
    purge.set_defaults(handler=_delegate("switchboard.metering.retention_cli", "run"))

    _limits_parser(sub)
    _audit_parser(sub)

    user = sub.add_parser("user", help="users of the embedded auth")
    user_sub = user.add_subparsers(dest="user_command", required=True)
    create = user_sub.add_parser("create", help="create a user; the password is read from standard input")
    create.add_argument("--email", required=True)
    create.add_argument("--role", default="User", choices=ROLE_CHOICES)
    create.set_defaults(handler=_delegate("switchboard.auth.users_cli", "run"))

    key = sub.add_parser("key", help="API keys of embedded-auth users")
    key_sub = key.add_subparsers(dest="key_command", required=True)
    key_create = key_sub.add_parser("create", help="issue an API key (svc_api_…) for a user; shown once")
    key_create.add_argument("--email", required=True, help="the user's email (see `switchboard user create`)")
    key_create.add_argument("--name", default="cli", help="service name the key is listed under")
    key_create.add_argument("--description", default="", help="what the key is for")
    key_create.set_defaults(handler=_delegate("switchboard.auth.keys_cli", "run"))
    return parser


def _preflight(args: argparse.Namespace) -> None:
    """Every verb but `serve` uses the secrets `serve` made, and says where to run when it finds none."""
    if args.command == "serve":
        return
    settings = load_settings(generate_secrets=False)
    if args.command not in WITHOUT_DATABASE:
        asyncio.run(check_database(settings.database_url))
        from switchboard.audit.capture import install
        from switchboard.audit.events import CLI, Origin

        install(default=Origin(actor=CLI))  # what a command changes is audited as the CLI's doing


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.debug:
        os.environ["SWITCHBOARD_DEBUG"] = "1"  # the workers of `serve` read it too
    try:
        _preflight(args)
        return int(args.handler(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"switchboard: {explain(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, SettingsError | ConfigError) else 1


if __name__ == "__main__":
    sys.exit(main())
