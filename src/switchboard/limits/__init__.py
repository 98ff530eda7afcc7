"""Spend and rate limits (SPEC §13): the /limits API, reserve-then-settle, windows and recovery."""
