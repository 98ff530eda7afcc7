"""Switchboard: an OpenAI-compatible LLM gateway."""

API_VERSION = "0.14.0"
SERVICE_NAME = "svc-agents"
