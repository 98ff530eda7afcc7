"""How `switchboard serve` runs: uvicorn's supervisor and workers, and the app as a worker builds it."""
