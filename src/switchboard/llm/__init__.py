"""The OpenAI-compatible /v1 surface: chat completions (streamed and not), embeddings, models."""
