"""agents domain."""
