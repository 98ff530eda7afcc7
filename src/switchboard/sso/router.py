"""The SSO routes: whether it is on, the start of a console sign-in, the issuer's callback, and the
ticket the console trades for its session (SPEC §24)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from switchboard.auth.dependencies import Auth
from switchboard.auth.schemas import LoginResult
from switchboard.errors import NotFound, SwitchboardError
from switchboard.sso.flow import STATE_TTL, SsoFlow
from switchboard.sso.pages import sign_in_failed
from switchboard.sso.schemas import SsoStatus, SsoTicketRequest

router = APIRouter(tags=["Auth"])
COOKIE = "switchboard_sso_state"
CALLBACK = "/auth/sso/callback"
SIGN_IN = "/auth/sso/login"
OptionalText = Annotated[str | None, Query(max_length=4096)]


def _flow(request: Request) -> SsoFlow:
    flow: SsoFlow | None = request.app.state.sso
    if flow is None:
        raise NotFound("single sign-on is not configured (SWITCHBOARD_OIDC_ISSUER)")
    return flow


Flow = Annotated[SsoFlow, Depends(_flow)]


@router.get("/auth/sso", operation_id="ssoStatus_Auth")
async def sso_status(request: Request) -> SsoStatus:
    on = request.app.state.sso is not None
    return SsoStatus(enabled=on, sign_in_url=SIGN_IN if on else None)


@router.get(SIGN_IN, include_in_schema=False)
async def sso_sign_in(flow: Flow) -> Response:
    try:
        url, state = await flow.start()
    except SwitchboardError as exc:
        return sign_in_failed(exc.message, exc.status)
    response = RedirectResponse(url, status_code=302)
    # The state comes back on the callback's query and must match this browser's cookie. Lax: the
    # issuer's redirect back is a top-level GET from another site.
    response.set_cookie(
        COOKIE,
        state,
        max_age=int(STATE_TTL.total_seconds()),
        path=CALLBACK,
        secure=flow.redirect_uri.startswith("https://"),
        httponly=True,
        samesite="lax",
    )
    return response


@router.get(CALLBACK, include_in_schema=False)
async def sso_callback(
    request: Request,
    flow: Flow,
    state: OptionalText = None,
    code: OptionalText = None,
    error: OptionalText = None,
) -> Response:
    try:
        ticket = await flow.finish(state=state, cookie=request.cookies.get(COOKIE), code=code, error=error)
    except SwitchboardError as exc:
        response: Response = sign_in_failed(exc.message, exc.status)
    else:
        # In the fragment: never sent to a server, and the console removes it from history at once.
        response = RedirectResponse(f"/console#sso={ticket}", status_code=303)
    response.delete_cookie(COOKIE, path=CALLBACK)
    return response


@router.post("/auth/sso/session", operation_id="ssoSession_Auth")
async def sso_session(request: Request, body: SsoTicketRequest, flow: Flow, auth: Auth) -> LoginResult:
    return await flow.session(auth, body.ticket.get_secret_value(), request.scope)
