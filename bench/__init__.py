"""The gateway benchmark: a fixed-answer nginx upstream, wrk load, and /proc sampling (issue 8)."""
