"""The page a person sees when an SSO sign-in cannot complete (the callback is a browser navigation,
so a JSON error would be a dead end): the reason, and the way back to the console."""

from __future__ import annotations

from html import escape

from fastapi.responses import HTMLResponse

from switchboard.console.assets import SECURITY_HEADERS

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in failed · Switchboard</title>
<link rel="stylesheet" href="/console/static/console.css">
</head>
<body>
<main id="main">
<section class="signed-out">
<h2>Sign-in failed</h2>
<p role="alert">{message}</p>
<p><a href="/console">Back to sign-in</a></p>
</section>
</main>
</body>
</html>
"""


def sign_in_failed(message: str, status: int) -> HTMLResponse:
    return HTMLResponse(_PAGE.format(message=escape(message)), status_code=status, headers=SECURITY_HEADERS)
