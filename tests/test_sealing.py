"""Sealed values (kiln.auth.sealing): what a CI variable is kept as. Only this server's key
opens one, a value sealed twice never reads the same, and an altered one is refused."""

from __future__ import annotations

import base64

import pytest

from kiln.auth.sealing import SealError, seal, unseal
from kiln.auth.server_secret import ENV


def test_a_sealed_value_opens_to_what_was_sealed(settings):
    for plain in ("", "s3cret", "ünïcødé ✓", "x" * 10_000, "two\nlines"):
        assert unseal(settings, seal(settings, plain)) == plain


def test_a_sealed_value_is_versioned_ascii_without_the_plaintext(settings):
    sealed = seal(settings, "plain-secret")
    assert sealed.startswith("v1:")
    assert sealed.isascii()
    assert "plain-secret" not in sealed


def test_each_seal_takes_a_fresh_nonce(settings):
    assert seal(settings, "same") != seal(settings, "same")


def test_another_key_cannot_open_it(settings, monkeypatch):
    sealed = seal(settings, "secret")
    monkeypatch.setenv(ENV, "another-server-key-" + "k" * 40)
    with pytest.raises(SealError):
        unseal(settings, sealed)


def test_an_altered_value_is_refused(settings):
    sealed = seal(settings, "secret")
    raw = bytearray(base64.urlsafe_b64decode(sealed[3:]))
    raw[-1] ^= 1
    with pytest.raises(SealError):
        unseal(settings, "v1:" + base64.urlsafe_b64encode(bytes(raw)).decode())


@pytest.mark.parametrize("stored", ["secret", "v1:", "v1:***", "v1:" + "A" * 8, "v2:" + "A" * 40])
def test_what_was_never_sealed_is_refused(settings, stored):
    with pytest.raises(SealError):
        unseal(settings, stored)
