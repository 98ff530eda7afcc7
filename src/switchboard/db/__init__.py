"""Storage plumbing: engine, sessions, declarative base, migrations."""
