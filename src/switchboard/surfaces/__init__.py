"""Inbound wire formats other than chat completions: each a pair of codecs over the one pipeline."""
