"""The format of the opaque secrets we issue: a prefix, 256 random bits, a CRC32 checksum.

`svc_api_` (API keys) or `svc_rt_` (refresh tokens), then 43 base62 characters from the OS random
source, then 6 base62 characters: zlib's CRC32 of everything before them, big-endian, zero-padded.
A secret scanner can match `svc_api_[0-9A-Za-z]{49}` and verify the checksum offline, and we refuse
a mistyped or invented value without a database round trip.
"""

from __future__ import annotations

import secrets
import string
import zlib

ALPHABET = string.digits + string.ascii_uppercase + string.ascii_lowercase  # base62, in this order
BODY_LENGTH = 43  # 43 x log2(62) > 256 bits
CHECKSUM_LENGTH = 6  # 62**6 > 2**32
API_KEY_PREFIX = "svc_api_"
REFRESH_PREFIX = "svc_rt_"
_INDEX = {char: value for value, char in enumerate(ALPHABET)}


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, rest = divmod(number, 62)
        digits.append(ALPHABET[rest])
    return "".join(reversed(digits))


def checksum(head: str) -> str:
    return _base62(zlib.crc32(head.encode("ascii")), CHECKSUM_LENGTH)


def issue(prefix: str) -> str:
    head = prefix + "".join(secrets.choice(ALPHABET) for _ in range(BODY_LENGTH))
    return head + checksum(head)


def well_formed(token: str, prefix: str) -> bool:
    """Prefix, length, alphabet and checksum all right (says nothing about whether it was issued)."""
    if len(token) != len(prefix) + BODY_LENGTH + CHECKSUM_LENGTH or not token.startswith(prefix):
        return False
    rest = token[len(prefix) :]
    if any(char not in _INDEX for char in rest):
        return False
    head, tail = token[:-CHECKSUM_LENGTH], token[-CHECKSUM_LENGTH:]
    return checksum(head) == tail


def display_prefix(token: str, prefix: str) -> str:
    """What listings show to tell keys apart: the prefix and four characters of the random body."""
    return token[: len(prefix) + 4]
