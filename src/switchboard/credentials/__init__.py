"""credentials domain."""
