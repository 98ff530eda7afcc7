"""Tests of the idempotency domain."""
