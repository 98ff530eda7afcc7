"""Domain-free helpers: secrets, crypto, pagination, time."""
