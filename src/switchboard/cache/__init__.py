"""The response cache (SPEC §23): opt-in, keyed by the canonical request and the credential's scope."""
