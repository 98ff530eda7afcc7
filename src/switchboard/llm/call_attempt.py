"""One attempt of a /v1 call: its route (model, credential), its number, and the body as sent to
that provider, built from the call request's body without changing it (SPEC §14).

The body is copied on write: one shallow copy of its top level, with the attempt's model and the
gateway's output cap, and only when one of them differs from what the client sent.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from switchboard.config_file import ModelEntry
from switchboard.credentials.store import CredentialRef
from switchboard.limits import enforce
from switchboard.llm.context import CallRequest
from switchboard.routing.route import Route
from switchboard.upstream.prices import litellm_max_output


class Attempt(NamedTuple):
    """Meets observability/attempt.AttemptFacts: telemetry reads an attempt through it."""

    request: CallRequest
    route: Route
    number: int  # 1 for the call's first attempt, counted across routes and retries
    body: dict[str, Any]  # the request's body, or a copy with this attempt's changes

    @property
    def model(self) -> ModelEntry:
        return self.route.model

    @property
    def credential(self) -> CredentialRef:
        return self.route.credential

    @property
    def endpoint(self) -> str:
        return self.request.endpoint

    @property
    def economy_id(self) -> uuid.UUID:
        return self.request.economy_id


def model_max(endpoint: str, model: ModelEntry) -> int:
    """The largest answer the model gives, as the limits count it (0: an endpoint without answers)."""
    if endpoint == "embeddings":
        return 0
    return litellm_max_output(model.provider, model.model) or enforce.DEFAULT_MAX_OUTPUT


def body_for(body: dict[str, Any], model: str, cap_field: str, cap: int | None) -> dict[str, Any]:
    """`body` as sent for `model` with the output cap `cap` (None: the caller's own, left as sent):
    `body` itself when that changes nothing, else a shallow copy; `body` is never changed."""
    if body.get("model") == model and (cap is None or body.get(cap_field) == cap):
        return body
    sent = dict(body)
    sent["model"] = model
    if cap is not None:
        sent[cap_field] = cap
    return sent


def first_attempt(request: CallRequest) -> Attempt:
    """The call's first attempt, on its first route, before the limits set a cap."""
    route = request.routes[0]
    return Attempt(request, route, 1, body_for(request.body, route.model.model, "", None))


def with_cap(attempt: Attempt, cap: int | None) -> Attempt:
    """The first attempt with the output cap the limits chose (SPEC §13), if they chose one."""
    if cap is None:
        return attempt
    body = body_for(attempt.body, attempt.model.model, enforce.cap_field(attempt.request.endpoint), cap)
    return Attempt(attempt.request, attempt.route, attempt.number, body)


def next_attempt(previous: Attempt, route: Route, gateway_cap: int | None) -> Attempt:
    """The attempt after `previous`, on `route` (the same route again, or the next). A later
    attempt's model may give shorter answers than the first's, and a provider refuses a cap above
    its model's (400): the cap the gateway set is brought within it, and back up for a model that
    allows it. A caller's own cap is the caller's to choose and is left as sent."""
    request = previous.request
    cap = None
    if gateway_cap is not None:
        cap = min(gateway_cap, model_max(request.endpoint, route.model))
    field = enforce.cap_field(request.endpoint) if cap is not None else ""
    return Attempt(request, route, previous.number + 1, body_for(request.body, route.model.model, field, cap))
