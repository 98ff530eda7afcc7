"""kit domain."""
