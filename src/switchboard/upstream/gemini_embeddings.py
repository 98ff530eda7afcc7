"""Gemini embeddings over the shared guarded pool, answered in OpenAI's shape.

Not through litellm: its async Gemini embedding path (1.106.0) ignores the client it is given, so
the call would leave our connect-time SSRF guard, our pool and our timeouts (and follow redirects).
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from switchboard.errors import BadRequest
from switchboard.upstream import exchange
from switchboard.upstream.openai_format import pack_base64
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.types import UpstreamReply, UpstreamTarget, Usage

ROOT = "https://generativelanguage.googleapis.com"
CHARS_PER_TOKEN = 4  # Google's rule of thumb; batchEmbedContents reports no token count


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return list(value)
    raise BadRequest("gemini embeddings take `input` as a string or a list of strings", param="input")


def _prompt_tokens(payload: dict[str, Any], texts: list[str]) -> int:
    reported = (payload.get("usageMetadata") or {}).get("promptTokenCount")
    if isinstance(reported, int):
        return reported
    return sum(math.ceil(len(text) / CHARS_PER_TOKEN) for text in texts if text)


async def embed(pool: ClientPool, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
    texts = _texts(body.get("input"))
    dimensions = body.get("dimensions")
    requests = [
        {
            "model": f"models/{target.model}",
            "content": {"parts": [{"text": text}]},
            **({"outputDimensionality": dimensions} if dimensions is not None else {}),
        }
        for text in texts
    ]
    url = f"{(target.base_url or ROOT).rstrip('/')}/v1beta/models/{target.model}:batchEmbedContents"
    request = exchange.build(
        pool, target, url, {"requests": requests}, {"x-goog-api-key": target.secret.reveal()}
    )
    payload = orjson.loads(await exchange.post_json(pool, target, request))
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, item in enumerate(payload.get("embeddings") or []):
        values = item.get("values") or []
        data.append(
            {"object": "embedding", "index": index, "embedding": pack_base64(values) if as_base64 else values}
        )
    prompt = _prompt_tokens(payload, texts)
    reply = {
        "object": "list",
        "data": data,
        "model": target.model,
        "usage": {"prompt_tokens": prompt, "total_tokens": prompt},
    }
    return UpstreamReply(body=orjson.dumps(reply), usage=Usage(prompt_tokens=prompt))
