"""upstream domain."""
