"""The web console (SPEC §18): static pages served at /console that call the gateway's JSON APIs."""
