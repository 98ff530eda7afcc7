"""The operator's catalog: models, aliases, tags, defaults; selector parsing and resolution."""
