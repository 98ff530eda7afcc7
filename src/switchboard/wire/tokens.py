"""Tokens counted as litellm counts them where a provider gives no count: tiktoken's cl100k_base
(litellm's default tokenizer, loaded from the copy litellm ships, never downloaded), or an estimate
of four characters a token when no tokenizer can be had."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

CL100K_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # tiktoken's cache name of cl100k_base
CL100K_PATTERN = (  # tiktoken's cl100k_base split pattern
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CHARS_PER_TOKEN = 4  # the estimate when no tokenizer can be had


def count_tokens(text: str) -> int:
    encoder = _cl100k()
    if encoder is None:
        return max(1, round(len(text) / CHARS_PER_TOKEN))
    return len(encoder.encode(text, disallowed_special=()))


@functools.cache
def _cl100k() -> Any:
    """tiktoken's cl100k_base from the file litellm ships (found without importing litellm), or None."""
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
    except ImportError:
        return None
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).with_name("litellm_core_utils") / "tokenizers" / CL100K_FILE
    if not path.is_file():
        return None
    try:
        ranks = load_tiktoken_bpe(str(path))
    except (OSError, ValueError):
        return None
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 100257},
    )
