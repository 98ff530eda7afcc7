"""docs/grafana-dashboard.json queries only what /metrics exposes, with the labels it has."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from switchboard.observability.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
SERIES = re.compile(r"\b((?:gen_ai|switchboard)_[a-z_]+)(?:\{([^}]*)\})?")
LABEL = re.compile(r"([a-z_]+)\s*(?:=~|!=|!~|=)")
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


def _exposed() -> dict[str, set[str]]:
    """Every sample name a scrape can carry, with its labels (histogram buckets add `le`)."""
    metrics = Metrics(CollectorRegistry())
    found: dict[str, set[str]] = {}
    for family in (metrics.duration, metrics.ttft, metrics.tokens, metrics.commit_seconds):
        labels = set(family._labelnames)
        for suffix in HISTOGRAM_SUFFIXES:
            found[family._name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    for counter in (
        metrics.requests,
        metrics.cost,
        metrics.upstream_errors,
        metrics.limit_rejections,
        metrics.limit_admissions,
        metrics.allowance_grants,
        metrics.fallbacks,
        metrics.db_pool_waits,
        metrics.db_pool_wait_seconds,
    ):
        found[counter._name + "_total"] = set(counter._labelnames)
    for gauge in (metrics.streams, metrics.queue_depth, metrics.db_pool_size, metrics.db_connections_in_use):
        found[gauge._name] = set()
    return found


def _exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [
        v["query"]["query"] for v in dashboard["templating"]["list"] if isinstance(v.get("query"), dict)
    ]
    return exprs


def test_every_dashboard_query_names_an_exposed_series_and_its_labels() -> None:
    exposed = _exposed()
    label_names = set().union(*exposed.values())
    used: set[str] = set()
    for expr in _exprs():
        for name, selector in SERIES.findall(expr):
            if name in label_names:
                continue
            assert name in exposed, (name, expr)
            used.add(name)
            assert set(LABEL.findall(selector or "")) <= exposed[name], (name, expr)
        for grouped in re.findall(r"by \(([^)]*)\)", expr):
            labels = {label.strip() for label in grouped.split(",")}
            names = [name for name, _ in SERIES.findall(expr) if name not in label_names]
            assert any(labels <= exposed[name] for name in names), (grouped, expr)
    # Every family of SPEC §17 is on the dashboard.
    families = {
        name.removesuffix(suffix)
        for name in used
        for suffix in (*HISTOGRAM_SUFFIXES, "_total")
        if name.endswith(suffix)
    }
    families |= used
    for family in (
        "switchboard_requests",
        "switchboard_cost",
        "switchboard_upstream_errors",
        "switchboard_fallbacks",
        "switchboard_limit_rejections",
        "switchboard_streams_in_flight",
        "switchboard_usage_writer_queue_depth",
        "switchboard_usage_writer_commit_seconds",
        "switchboard_db_pool_size",
        "switchboard_db_connections_in_use",
        "switchboard_db_pool_waits",
        "gen_ai_server_request_duration_seconds",
        "gen_ai_server_time_to_first_token_seconds",
        "gen_ai_client_token_usage",
    ):
        assert family in families, family


def test_the_exposed_names_match_a_real_scrape() -> None:
    from prometheus_client import generate_latest

    metrics = Metrics(CollectorRegistry())
    metrics.series("openai", "m", "chat.completions", "", answered=True, listed=()).duration.observe(0.1)
    metrics.request("chat.completions", 200)
    metrics.cost_of("e").inc(1)
    metrics.upstream_error("openai", "x")
    text = generate_latest(metrics.registry).decode()
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert names - {n for n in names if n.endswith("_created")} <= set(_exposed())
