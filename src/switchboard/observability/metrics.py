"""The Prometheus families of SPEC §17, with label children resolved once and kept.

Names and labels follow the OpenTelemetry GenAI conventions as Prometheus spells them; the gateway's
own families start with `switchboard_`. Labels never carry a user id, a key or a prompt: a model
label is earned (see `Metrics.series`), an economy label is an economy
id (economies are made by admins), error and kind labels are the gateway's own error codes.

In a server of several workers, prometheus_client's multiprocess mode (PROMETHEUS_MULTIPROC_DIR, set
by workers.py before the workers start) writes every value to a per-process file that a scrape adds
up; in one process the values live in `registry`.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# The OpenTelemetry GenAI semantic conventions' advised bucket boundaries.
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# A caller may name any model of a provider in reach (SPEC §6): a model the catalog does not list
# earns a label only once a provider has answered a call for it, and past this many such
# provider/model pairs a process labels the rest `other`, so label sets stay bounded.
MAX_MODELS = 200
OTHER = "other"

GEN_AI = ("gen_ai_provider_name", "gen_ai_request_model", "gen_ai_operation_name")


def operation_of(endpoint: str) -> str:
    """`gen_ai_operation_name`: every generating surface is a `chat`; embeddings are `embeddings`."""
    return "embeddings" if endpoint == "embeddings" else "chat"


@dataclass(slots=True)
class CallSeries:
    """One label set's children: what a settled call observes, looked up once per label set."""

    duration: Histogram
    ttft: Histogram
    input_tokens: Histogram
    output_tokens: Histogram


class Metrics:
    """`app.state.metrics`: the families, and the children the pipeline's events touch."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.duration = Histogram(
            "gen_ai_server_request_duration_seconds",
            "Duration of model calls, from arrival to settlement; error_type is set on failed calls.",
            (*GEN_AI, "error_type"),
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.ttft = Histogram(
            "gen_ai_server_time_to_first_token_seconds",
            "Time from a streamed call's arrival to its first event, once per successful stream.",
            GEN_AI,
            buckets=TTFT_BUCKETS,
            registry=registry,
        )
        self.tokens = Histogram(
            "gen_ai_client_token_usage",
            "Tokens per model call as metered, by gen_ai_token_type (input, output).",
            (*GEN_AI, "gen_ai_token_type"),
            buckets=TOKEN_BUCKETS,
            registry=registry,
        )
        self.requests = Counter(
            "switchboard_requests",
            "Model-call requests by endpoint and HTTP status.",
            ("endpoint", "status"),
            registry=registry,
        )
        self.cost = Counter(
            "switchboard_cost",
            "Cost of metered calls in nano-units of the economy's currency.",
            ("economy",),
            registry=registry,
        )
        # SPEC §20: the token classes priced apart, summed per economy beside the cost.
        self.token_classes = Counter(
            "switchboard_tokens",
            "Tokens of metered calls by class (cached: cache reads, cache_write, reasoning), per economy.",
            ("economy", "class"),
            registry=registry,
        )
        self.upstream_errors = Counter(
            "switchboard_upstream_errors",
            "Failed provider attempts by provider and error kind.",
            ("provider", "kind"),
            registry=registry,
        )
        self.limit_rejections = Counter(
            "switchboard_limit_rejections",
            "Calls refused by a spend or rate limit (402 or 429) before the provider was called.",
            registry=registry,
        )
        # SPEC §13: how calls under limits were admitted, and the allowances that made the cheap way possible.
        self.limit_admissions = Counter(
            "switchboard_limit_admissions",
            "Calls admitted under at least one limit, by path: allowance (in memory, on this process's "
            "share of the limits) or reservation (a hold of their own, written before the provider is "
            "called).",
            ["path"],
            registry=registry,
        )
        self.admitted_on_allowance = self.limit_admissions.labels(path="allowance")
        self.admitted_on_reservation = self.limit_admissions.labels(path="reservation")
        self.allowance_grants = Counter(
            "switchboard_limit_allowance_grants",
            "Shares of limits granted to this process's allowances (one transaction each).",
            registry=registry,
        )
        # SPEC §23: lookups of calls the response cache applies to; `result` is hit or miss.
        self.cache_lookups = Counter(
            "switchboard_cache_lookups",
            "Response cache lookups by result (hit, miss), of calls the cache applies to.",
            ("result",),
            registry=registry,
        )
        self.fallbacks = Counter(
            "switchboard_fallbacks",
            "Failed attempts a call moved on from (another try, credential or model).",
            registry=registry,
        )
        self.streams = Gauge(
            "switchboard_streams_in_flight",
            "Streamed answers being relayed now.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.queue_depth = Gauge(
            "switchboard_usage_writer_queue_depth",
            "Usage records waiting for the usage writer's next batch.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.commit_seconds = Histogram(
            "switchboard_usage_writer_commit_seconds",
            "Time to write one batch of usage records (one transaction).",
            buckets=COMMIT_BUCKETS,
            registry=registry,
        )
        # The PostgreSQL connection budget (db/budgeted_pool.py); summed over a server's workers.
        self.db_pool_size = Gauge(
            "switchboard_db_pool_size",
            "Database connections the process's pool may open at most (SWITCHBOARD_DATABASE_POOL_SIZE).",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.db_connections_in_use = Gauge(
            "switchboard_db_connections_in_use",
            "Database connections checked out of the pool (the limits ledger's kept ones included), "
            "sampled every second.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.db_pool_waits = Counter(
            "switchboard_db_pool_waits",
            "Checkouts that found every connection of the pool's budget taken and waited for one.",
            registry=registry,
        )
        self.db_pool_wait_seconds = Counter(
            "switchboard_db_pool_wait_seconds",
            "Time spent waiting for a connection of the pool's budget.",
            registry=registry,
        )
        self._series: dict[tuple[str, str, str, str], CallSeries] = {}
        self._models: set[tuple[str, str]] = set()  # the pairs with a label of their own
        self._unlisted = 0  # of those, the ones the catalog does not list
        self._requests: dict[tuple[str, int], Counter] = {}
        self._costs: dict[str, Counter] = {}
        self._classes: dict[tuple[str, str], Counter] = {}
        self._errors: dict[tuple[str, str], Counter] = {}

    def pool_waited(self, seconds: float) -> None:
        self.db_pool_waits.inc()
        self.db_pool_wait_seconds.inc(seconds)

    def series(
        self,
        provider: str,
        model: str,
        endpoint: str,
        error_type: str,
        answered: bool,
        listed: Container[str],
    ) -> CallSeries:
        """The children of a call's label set. `model` is its own label once the catalog lists it or
        a provider has `answered` a call for it; until then `other`: names a caller makes up (200
        bogus ones fill no cap, and the models seen after them keep their names)."""
        found = self._series.get((provider, model, endpoint, error_type))
        if found is not None:
            return found
        if (provider, model) not in self._models and model != OTHER:
            if f"{provider}/{model}" not in listed:
                if not answered or self._unlisted >= MAX_MODELS:
                    return self.series(provider, OTHER, endpoint, error_type, answered, listed)
                self._unlisted += 1
            self._models.add((provider, model))
        labels = (provider, model, operation_of(endpoint))
        found = self._series[(provider, model, endpoint, error_type)] = CallSeries(
            duration=self.duration.labels(*labels, error_type),
            ttft=self.ttft.labels(*labels),
            input_tokens=self.tokens.labels(*labels, "input"),
            output_tokens=self.tokens.labels(*labels, "output"),
        )
        return found

    def request(self, endpoint: str, status: int) -> None:
        key = (endpoint, status)
        child = self._requests.get(key)
        if child is None:
            child = self._requests[key] = self.requests.labels(endpoint, str(status))
        child.inc()

    def cost_of(self, economy: str) -> Counter:
        child = self._costs.get(economy)
        if child is None:
            child = self._costs[economy] = self.cost.labels(economy)
        return child

    def tokens_of(self, economy: str, token_class: str) -> Counter:
        key = (economy, token_class)
        child = self._classes.get(key)
        if child is None:
            child = self._classes[key] = self.token_classes.labels(economy, token_class)
        return child

    def upstream_error(self, provider: str, kind: str) -> None:
        key = (provider, kind)
        child = self._errors.get(key)
        if child is None:
            child = self._errors[key] = self.upstream_errors.labels(provider, kind)
        child.inc()
