"""Start-up of the agents domain: resolution rules from the catalog, then the config's seed agents."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard.agents.seeding import seed_agents, seed_specs
from switchboard.agents.validation import ResolutionRules
from switchboard.config_file import ConfigError, locate


async def startup(app: FastAPI) -> None:
    settings = app.state.settings
    rules = ResolutionRules(catalog=app.state.catalog)
    app.state.agent_rules = rules
    try:
        specs = seed_specs(settings.config.agents, rules)
    except ConfigError as exc:
        raise ConfigError(locate(settings.config_path, str(exc))) from None
    await seed_agents(app.state.sessionmaker, specs)


async def shutdown(app: FastAPI) -> None:
    return None
