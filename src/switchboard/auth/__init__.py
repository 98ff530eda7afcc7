"""Authentication and authorisation: tokens, principals, permission dependencies, API keys."""
