"""Provider kinds with no safe endpoint of their own: litellm's default is on the gateway's host (SPEC §21).

Without a base_url, litellm 1.106.0 sends these kinds' calls (and its side calls, such as ollama's
`/api/show`) to a server it assumes runs next to it: localhost:11434 for ollama, localhost:8000 for
lemonade, and so on. On a shared gateway that is a door into the gateway's own host, so without
SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS such a credential needs a base_url, which the address rules
then check. tests/upstream/test_private_defaults.py probes every long-tail kind of the pinned
litellm for a private default and fails on one missing here.
"""

from __future__ import annotations

# Found by the probe: litellm's default endpoint for these is a loopback address.
PRIVATE_DEFAULT = frozenset({
    "docker_model_runner", "langflow", "langgraph", "lemonade", "llamafile", "ollama", "ollama_chat",
    # xinference's default (127.0.0.1:9997) is in litellm's source for its embeddings path.
    "xinference",
    # Self-hosted servers whose litellm default is not theirs at all: without a base_url litellm
    # sends the caller's key to api.openai.com (hosted_vllm, lm_studio) or loads the model into the
    # gateway's own process (vllm).
    "hosted_vllm", "lm_studio", "vllm",
})  # fmt: skip


def refusal(kind: str, base_url: str | None, allow_private: bool) -> str | None:
    """Why a credential of `kind` cannot be used without a base_url here, or None."""
    if kind not in PRIVATE_DEFAULT or base_url or allow_private:
        return None
    return (
        f"{kind} credentials need a public base_url: litellm's default endpoint for {kind} is the "
        "gateway's own host (or start the gateway with SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS=true)"
    )
