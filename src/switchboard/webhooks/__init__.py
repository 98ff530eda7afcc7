"""Webhooks (SPEC §22): signed event deliveries from a database outbox."""
