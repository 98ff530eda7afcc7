"""idempotency domain."""
