"""The provider kinds Switchboard reaches, and what each kind's secret holds (SPEC §5, §7, §15).

The one place that answers "may a credential, a selector or the catalog name this provider?". It is
plain data so that answering never imports litellm (about two seconds): deployments that only call
OpenAI-format providers never load it.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

# Called by the gateway's own code: a byte relay for openai, adapters for anthropic and gemini.
NATIVE: tuple[str, ...] = ("openai", "anthropic", "gemini")

# litellm 1.106.0's provider names (`litellm.provider_list`, the values of `LlmProviders`), copied
# rather than read from litellm at run time; tests/upstream/test_long_tail.py fails when the pinned
# litellm's list differs, so a litellm upgrade updates this tuple in the same change.
# fmt: off
LITELLM_KINDS: tuple[str, ...] = (
    "a2a", "a2a_agent", "ai21", "ai21_chat", "aiml", "aiohttp_openai", "amazon_nova", "anthropic",
    "anthropic_text", "apertis", "assemblyai", "auto_router", "aws_polly", "aws_textract", "azure",
    "azure_ai", "azure_speech", "azure_text", "baseten", "bedrock", "bedrock_mantle",
    "black_forest_labs", "bytez", "cerebras", "charity_engine", "chatgpt", "chutes", "clarifai",
    "cloudflare", "codestral", "cognition", "cohere", "cohere_chat", "cometapi", "compactifai",
    "cortecs", "cursor", "custom", "custom_openai", "darkbloom", "dashscope", "databricks", "datarobot",
    "deepgram", "deepinfra", "deepseek", "docker_model_runner", "dotprompt", "edenai", "elevenlabs",
    "empower", "fal_ai", "featherless_ai", "fireworks_ai", "friendliai", "galadriel", "gdc", "gemini",
    "gigachat", "github", "github_copilot", "gradient_ai", "groq", "helicone", "heroku", "hosted_vllm",
    "huggingface", "humanloop", "hyperbolic", "inception", "infinity", "jina_ai", "lambda_ai",
    "langflow", "langfuse", "langgraph", "lemonade", "libertai", "litellm_agent", "litellm_proxy",
    "llamafile", "lm_studio", "manus", "maritalk", "meta", "meta_llama", "milvus", "minimax", "mistral",
    "modelscope", "mongodb", "moonshot", "morph", "nadir", "nano-gpt", "nebius", "neosantara",
    "nlp_cloud", "novita", "nscale", "nvidia_nim", "nvidia_riva", "oci", "ollama", "ollama_chat",
    "oobabooga", "openai", "openai_like", "openrouter", "ovhcloud", "parasail", "perplexity", "petals",
    "pg_vector", "pinstripes", "poe", "predibase", "prism", "publicai", "qwen_ai_platform", "qwencloud",
    "ragflow", "recraft", "reducto", "reka", "replicate", "runwayml", "s3_vectors", "sagemaker",
    "sagemaker_chat", "sagemaker_nova", "sail", "sambanova", "sap", "scaleway", "scx-ai", "snowflake",
    "soniox", "stability", "strands_decider", "synthetic", "tencent", "tensormesh",
    "text-completion-codestral", "text-completion-inception", "text-completion-openai", "together_ai",
    "topaz", "transcribe", "triton", "typesafe", "v0", "valkey", "vercel_ai_gateway", "vertex_ai",
    "vertex_ai_beta", "vllm", "volcengine", "voyage", "wandb", "watsonx", "watsonx_text", "xai",
    "xiaomi_mimo", "xinference", "zai"
)
# fmt: on

# litellm 1.106.0 names these but answers every chat call for them before sending anything:
# `completion()` has no route for them ("Unmapped LLM provider": speech, image, search, vector
# stores, agents, `openai_like`, whose calls go through the other kinds), or, for gradient_ai, it
# refuses the retry setting litellm itself passes. Neither listed by GET /providers nor accepted;
# tests/upstream/test_provider_kinds.py calls each through the pinned litellm to prove both lists.
# fmt: off
NO_CHAT_ROUTE = frozenset({
    "a2a_agent", "auto_router", "aws_polly", "aws_textract", "azure_speech", "black_forest_labs",
    "cursor", "deepgram", "dotprompt", "elevenlabs", "gradient_ai", "humanloop", "infinity", "jina_ai",
    "langfuse", "litellm_agent", "manus", "milvus", "mongodb", "nvidia_riva", "openai_like",
    "pg_vector", "recraft", "reducto", "runwayml", "s3_vectors", "soniox", "stability",
    "strands_decider", "topaz", "transcribe", "typesafe", "valkey", "voyage",
})
# fmt: on
# litellm 1.106.0 sends these kinds' calls past the client it is handed, so the one egress guard
# (address rule, proxy, roots, never sent twice) cannot cover them, and litellm offers no public
# setting that would hand them ours. Neither listed by GET /providers nor accepted; the reason is
# what a caller is told. tests/upstream/test_unguarded_kinds.py proves each reason on the pinned
# litellm and fails when one of them starts using the client it is given (then offer it again).
_OWN_ASYNC = "litellm sends its calls on an HTTP client of its own, outside the gateway's egress guard"
_OWN_SYNC = "litellm sends its calls on a blocking HTTP client of its own, outside the gateway's egress guard"
UNGUARDED: dict[str, str] = {
    "aiohttp_openai": _OWN_ASYNC,
    "amazon_nova": _OWN_SYNC,
    "anthropic_text": _OWN_ASYNC,
    "cloudflare": _OWN_ASYNC,
    "cohere": _OWN_ASYNC,
    "cohere_chat": _OWN_ASYNC,
    "custom": "litellm makes its calls with a blocking client that would stall every other call",
    "gigachat": "litellm signs in on a client of its own with TLS verification turned off",
    "maritalk": _OWN_SYNC,
    "nlp_cloud": _OWN_SYNC,
    "oobabooga": _OWN_SYNC,
    "petals": "litellm runs the model inside the gateway's own process",
    "replicate": _OWN_ASYNC,
    "sagemaker": _OWN_ASYNC,
    "text-completion-codestral": _OWN_ASYNC,
    "watsonx": "litellm fetches its IBM Cloud token on a blocking client and reads the gateway's environment",
    "watsonx_text": (
        "litellm fetches its IBM Cloud token on a blocking client and reads the gateway's environment"
    ),
}
# What to use instead, where the provider offers an OpenAI-compatible endpoint.
INSTEAD: dict[str, str] = {
    "cohere": "an openai credential with base_url https://api.cohere.ai/compatibility/v1",
    "cohere_chat": "an openai credential with base_url https://api.cohere.ai/compatibility/v1",
    "cloudflare": "an openai credential with base_url "
    "https://api.cloudflare.com/client/v4/accounts/ACCOUNT_ID/ai/v1",
    "text-completion-codestral": "a codestral credential",
    "anthropic_text": "an anthropic credential",
    "aiohttp_openai": "an openai credential",
    "sagemaker": "a sagemaker_chat credential",
}
LONG_TAIL: tuple[str, ...] = tuple(
    kind
    for kind in LITELLM_KINDS
    if kind not in NATIVE and kind not in NO_CHAT_ROUTE and kind not in UNGUARDED
)
_KNOWN = frozenset(LONG_TAIL) | frozenset(NATIVE)

# litellm authenticates these with the gateway host's own identity (Google application default
# credentials, a device login or service key found on the host) whatever secret it is given, so a
# caller's credential would spend the operator's account. Refused until each gets a secret shape
# that carries its own identity safely.
BORROWS_HOST_IDENTITY = frozenset({"chatgpt", "gdc", "github_copilot", "sap", "vertex_ai", "vertex_ai_beta"})

# Azure is called at `<base_url>/openai/deployments/<deployment>/…`: without a base_url there is
# nothing to call (litellm would read AZURE_API_BASE from the gateway's environment instead).
NEEDS_BASE_URL = frozenset({"azure", "azure_text"})

MAX_FIELD_CHARS = 2048


@dataclass(frozen=True)
class SecretShape:
    """A secret given as a JSON object of these string fields, encrypted whole."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    hint_field: str = ""  # whose last characters are the credential's secret_hint

    @property
    def fields(self) -> tuple[str, ...]:
        return self.required + self.optional


_AZURE = SecretShape(("api_key", "api_version"), hint_field="api_key")
# With the key pair given litellm never falls back to the host's AWS identity; without it, it would.
_AWS = SecretShape(
    ("aws_access_key_id", "aws_secret_access_key", "aws_region_name"),
    ("aws_session_token",),
    hint_field="aws_access_key_id",
)
SECRET_SHAPES: dict[str, SecretShape] = {
    "azure": _AZURE,
    "azure_text": _AZURE,
    "bedrock": _AWS,
    "sagemaker_chat": _AWS,
    "sagemaker_nova": _AWS,
}


class SecretProblem(ValueError):
    """A secret that does not fit its provider; the message never quotes any part of it."""


def is_known(kind: str) -> bool:
    return kind in _KNOWN


def is_native(kind: str) -> bool:
    return kind in NATIVE


def checked_kind(kind: str) -> str:
    """`kind` when Switchboard knows it; a pydantic validator for every field that names a provider."""
    if kind in NO_CHAT_ROUTE:
        raise ValueError(f"provider {kind!r} cannot be called for chat; GET /providers lists the kinds")
    if kind in UNGUARDED:
        raise ValueError(unguarded_reason(kind))
    if kind not in _KNOWN:
        raise ValueError(f"unknown provider {kind!r}; GET /providers lists the provider kinds")
    return kind


def unguarded_reason(kind: str) -> str:
    """Why a kind of UNGUARDED is not offered, and what to use instead where there is something."""
    instead = INSTEAD.get(kind)
    tail = f"; use {instead}" if instead else ""
    return f"provider {kind!r} is not offered: {UNGUARDED[kind]}{tail}"


def storable_kind(kind: str) -> str:
    """checked_kind for a credential's provider, letting the kinds of UNGUARDED through to the
    store's own refusal (a 422 naming the reason, SPEC §21) rather than a schema error."""
    return kind if kind in UNGUARDED else checked_kind(kind)


def refusal(kind: str, base_url: str | None, allow_private: bool) -> str | None:
    """Why a caller's credential of `kind` with this base_url cannot be stored, or None."""
    if kind in BORROWS_HOST_IDENTITY:
        return (
            f"{kind} credentials are not offered: litellm would sign in with the gateway host's own identity"
        )
    if kind in NEEDS_BASE_URL and not base_url:
        return f"{kind} credentials need base_url (the resource endpoint, e.g. https://NAME.openai.azure.com)"
    return None


def parse_secret(kind: str, plain: str) -> dict[str, str] | None:
    """A shaped kind's secret as its fields, checked; None for kinds whose secret is one string."""
    shape = SECRET_SHAPES.get(kind)
    if shape is None:
        if plain.lstrip().startswith("{"):
            raise SecretProblem(f"{kind} takes its secret as one string (the API key), not a JSON object")
        return None
    names = ", ".join(shape.required)
    try:
        given = orjson.loads(plain)
    except orjson.JSONDecodeError:
        given = None
    if not isinstance(given, dict):
        raise SecretProblem(f"{kind} takes its secret as a JSON object with {names}")
    unknown = sorted(set(given) - set(shape.fields))
    if unknown:
        raise SecretProblem(f"{kind} secret has unknown field(s) {', '.join(unknown)}; it takes {names}")
    missing = [name for name in shape.required if name not in given]
    if missing:
        raise SecretProblem(f"{kind} secret is missing {', '.join(missing)}; it takes {names}")
    fields: dict[str, str] = {}
    for name in shape.fields:
        if name in given:
            fields[name] = _field(kind, name, given[name])
    return fields


def _field(kind: str, name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SecretProblem(f"{kind} secret field {name} must be a non-empty string")
    value = value.strip()
    if len(value) > MAX_FIELD_CHARS:
        raise SecretProblem(f"{kind} secret field {name} must be at most {MAX_FIELD_CHARS} characters")
    # Each value goes into a header, a query or a signature, where anything else breaks or injects.
    if any(not ("!" <= ch <= "~") for ch in value):
        raise SecretProblem(f"{kind} secret field {name} must be printable ASCII without spaces")
    return value


def canonical_secret(kind: str, plain: str) -> tuple[str, str]:
    """(the text to encrypt, the text the hint is taken from) for a secret that fits `kind`."""
    fields = parse_secret(kind, plain)
    if fields is None:
        return plain, plain
    shape = SECRET_SHAPES[kind]
    return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS).decode(), fields.get(shape.hint_field, "")


def secret_values(plain: str) -> list[str]:
    """Every value a JSON-object secret holds (to scrub from provider text); [] for other secrets."""
    if not plain.startswith("{"):
        return []
    try:
        given = orjson.loads(plain)
    except orjson.JSONDecodeError:
        return []
    return [v for v in given.values() if isinstance(v, str) and v] if isinstance(given, dict) else []
