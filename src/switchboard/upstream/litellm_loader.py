"""The one place litellm is imported: lazily, and only after its own network calls are switched off."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import threading
import warnings
from types import ModuleType
from typing import Any

# Knobs litellm 1.106.0 reads from the environment at import or first use:
# - LITELLM_LOCAL_MODEL_COST_MAP: use the bundled cost map; otherwise importing litellm fetches it
#   from GitHub (seconds of retries on a closed network).
# - LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS: use the bundled beta-header table; otherwise the first
#   Anthropic call fetches it from GitHub, synchronously, inside the event loop.
# - LITELLM_MODE=PRODUCTION: otherwise importing litellm loads a `.env` file from the working
#   directory into our process environment.
# - EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER: send the OpenAI-compatible long-tail kinds (deepinfra,
#   perplexity, custom_openai, …) through the AsyncHTTPHandler we hand it, on our guarded pool, as
#   it does for mistral or groq; otherwise it wants an OpenAI SDK client for them.
# litellm 1.106.0 has no telemetry (the old `litellm.telemetry` flag is gone); its callback lists
# start empty and we never add to them, so nothing else leaves the process.
_ENVIRONMENT = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_MODE": "PRODUCTION",
    "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER": "True",
}
_lock = threading.Lock()
_module: ModuleType | None = None


def quiet_environment() -> None:
    """Set litellm's offline knobs; harmless to call before anything imports it."""
    os.environ.update(_ENVIRONMENT)


def load_litellm() -> ModuleType:
    """litellm, imported once (about two seconds the first time: call it off the hot path)."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            quiet_environment()
            # Its pydantic types warn about ReadOnly TypedDict items on first use: noise, not news.
            warnings.filterwarnings(
                "ignore", message=r".*is using the `ReadOnly` qualifier", category=UserWarning
            )
            module: Any = importlib.import_module("litellm")
            module.suppress_debug_info = True  # else it prints "Give Feedback" banners to stdout on errors
            module.drop_params = False
            # Else counting a llama-family model's tokens downloads a tokenizer from Hugging Face,
            # retrying for most of a minute on a closed network; tiktoken's bundled one is used.
            module.disable_hf_tokenizer_download = True
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
                # Its debug and info lines can echo request details; warnings and errors stay visible.
                logging.getLogger(name).setLevel(logging.WARNING)
            _module = module
    return _module


async def litellm_module() -> ModuleType:
    """load_litellm() without blocking the event loop on the first import."""
    return _module if _module is not None else await asyncio.to_thread(load_litellm)


async def stop_litellm_worker() -> None:
    """Stop litellm's background logging tasks on this event loop, if calls started any here.

    litellm starts one per event loop on its first call (and a new one when it meets another loop)
    and never stops them; one left pending when its loop closes is destroyed at exit with "Task was
    destroyed but it is pending" / "Event loop is closed". We register no callbacks, so they have
    nothing to flush.
    """
    if _module is None:
        return
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    task = GLOBAL_LOGGING_WORKER._worker_task
    if task is not None and task.get_loop() is asyncio.get_running_loop():
        await GLOBAL_LOGGING_WORKER.stop()
    # Workers litellm left behind on this loop when it moved to another one.
    stranded = [
        task
        for task in asyncio.all_tasks()
        if not task.done() and getattr(task.get_coro(), "__qualname__", "") == "LoggingWorker._worker_loop"
    ]
    for task in stranded:
        task.cancel()
    await asyncio.gather(*stranded, return_exceptions=True)
