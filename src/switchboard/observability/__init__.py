"""Metrics, traces and the access log, hung off the pipeline's few events (SPEC §17)."""
