"""GET /metrics (SPEC §17): the metrics token, permission ReadMetrics, or role Admin/SuperAdmin."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from starlette.responses import Response

from switchboard.errors import Forbidden
from switchboard.observability.scrape import CONTENT_TYPE, exposition

router = APIRouter(tags=["Health"])

READ_METRICS = "ReadMetrics"


def _is_metrics_token(request: Request) -> bool:
    expected = request.app.state.settings.metrics_token
    if expected is None:  # an unset token matches nothing, `Bearer null` included
        return False
    scheme, _, presented = (request.headers.get("authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        presented.strip().encode(), expected.get_secret_value().encode()
    )


@router.get(
    "/metrics",
    operation_id="getMetrics_Health",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    """Prometheus text format 0.0.4, summed over every worker of this server."""
    state = request.app.state
    if not _is_metrics_token(request):
        principal = await state.authenticator.authenticate(request.headers.get("authorization"))
        if not (principal.is_admin or principal.has_permission(READ_METRICS)):
            raise Forbidden(f"Insufficient permissions: {READ_METRICS}")
    return Response(exposition(state.metrics), media_type=CONTENT_TYPE)
