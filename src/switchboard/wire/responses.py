"""OpenAI Responses stream events that end a response, as both sides name them: the Responses
surface writes and holds them back (surfaces/responses_*.py), the native relay reads the usage and
the failure from them (upstream/native.py)."""

from __future__ import annotations

COMPLETED = "response.completed"
INCOMPLETE = "response.incomplete"
FAILED = "response.failed"
# A response's last event when it was answered (in full or cut short): it carries the usage.
ANSWERED = (COMPLETED, INCOMPLETE)
ENDED = (*ANSWERED, FAILED)
