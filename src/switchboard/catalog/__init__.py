"""catalog domain."""
