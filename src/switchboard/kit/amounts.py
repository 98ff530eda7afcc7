"""Amounts (nano-units, tokens, requests) as the API and the config write them: integer strings."""

from __future__ import annotations

MAX_AMOUNT = 2**63 - 1  # the counters are BIGINT


def parse_amount(value: object) -> int | None:
    """An amount is an integer string ("1500"); None for anything else (a JSON number included)."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit() or len(value) > 19:
        return None
    amount = int(value)
    return amount if amount <= MAX_AMOUNT else None
