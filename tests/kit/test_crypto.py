"""kit.crypto: AES-256-GCM with a random nonce, the key id inside the value, and bound associated data."""

from __future__ import annotations

import os

import pytest

from switchboard.kit.crypto import CryptoError, Keyring, key_id_of

K1, K2 = os.urandom(32), os.urandom(32)
AAD = b'["credential","row-1"]'


def test_a_sealed_value_opens_with_the_same_associated_data() -> None:
    ring = Keyring([("k1", K1)])
    sealed = ring.seal(b"sk-plain", AAD)
    assert b"sk-plain" not in sealed
    assert ring.open(sealed, AAD) == b"sk-plain"


def test_every_seal_uses_a_fresh_nonce() -> None:
    ring = Keyring([("k1", K1)])
    assert ring.seal(b"same", AAD) != ring.seal(b"same", AAD)


def test_other_associated_data_does_not_open() -> None:
    ring = Keyring([("k1", K1)])
    with pytest.raises(CryptoError):
        ring.open(ring.seal(b"sk-plain", AAD), b'["credential","row-2"]')


@pytest.mark.parametrize("position", [0, 1, 3, 10, -1])
def test_any_changed_byte_does_not_open(position: int) -> None:
    ring = Keyring([("k1", K1)])
    sealed = bytearray(ring.seal(b"sk-plain", AAD))
    sealed[position] ^= 0x01
    with pytest.raises(CryptoError):
        ring.open(bytes(sealed), AAD)


@pytest.mark.parametrize("sealed", [b"", b"\x01", b"\x02\x02k1" + bytes(40), b"\x01\x02k1" + bytes(10)])
def test_truncated_or_foreign_values_do_not_open(sealed: bytes) -> None:
    with pytest.raises(CryptoError):
        Keyring([("k1", K1)]).open(sealed, AAD)


def test_the_first_key_seals_and_every_key_opens() -> None:
    old = Keyring([("k1", K1)]).seal(b"old", AAD)
    ring = Keyring([("k2", K2), ("k1", K1)])
    assert key_id_of(old) == "k1"
    assert ring.open(old, AAD) == b"old"
    assert key_id_of(ring.seal(b"new", AAD)) == "k2"


def test_a_value_under_a_key_no_longer_configured_does_not_open() -> None:
    old = Keyring([("k1", K1)]).seal(b"old", AAD)
    with pytest.raises(CryptoError, match="not configured"):
        Keyring([("k2", K2)]).open(old, AAD)


def test_reseal_moves_a_value_to_the_active_key() -> None:
    ring = Keyring([("k2", K2), ("k1", K1)])
    moved = ring.reseal(Keyring([("k1", K1)]).seal(b"secret", AAD), AAD)
    assert key_id_of(moved) == "k2"
    assert Keyring([("k2", K2)]).open(moved, AAD) == b"secret"


def test_the_same_key_id_with_another_key_does_not_open() -> None:
    sealed = Keyring([("k1", K1)]).seal(b"secret", AAD)
    with pytest.raises(CryptoError):
        Keyring([("k1", K2)]).open(sealed, AAD)


@pytest.mark.parametrize(
    "keys", [[], [("k1", b"short")], [("", K1)], [("k1", K1), ("k1", K2)], [("ключ", K1)], [("k" * 65, K1)]]
)
def test_a_bad_keyring_is_refused(keys: list[tuple[str, bytes]]) -> None:
    with pytest.raises(ValueError):
        Keyring(keys)
