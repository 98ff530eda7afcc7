"""llm domain."""
