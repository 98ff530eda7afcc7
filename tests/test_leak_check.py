"""The suite's closing leak check (tests/conftest.py, tests/support/recorder.py) finds a remembered
secret in any recorded body or headers, and only there."""

from __future__ import annotations

import httpx

from tests.support.recorder import ResponseRecorder


def _response(body: bytes, **headers: str) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "application/json", **headers})


def test_a_secret_in_a_body_or_a_header_is_a_leak_and_one_split_between_two_bodies_is_not() -> None:
    recorder = ResponseRecorder()
    in_body, in_header, split, kept = (
        recorder.remember_secret(f"sk-{name}-0123456789") for name in ("body", "head", "split", "kept")
    )
    recorder.record(_response(b'{"key": "' + in_body.encode() + b'"}'))
    recorder.record(_response(b"{}", **{"x-echo": in_header}))
    recorder.record(_response(split[:8].encode()))
    recorder.record(_response(split[8:].encode()))
    assert kept  # remembered, never answered
    assert sorted(recorder.leaks()) == ["sk-b…", "sk-h…"]
