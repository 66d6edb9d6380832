"""Values kept encrypted at rest: CI variables (instance, group, project, pipeline, schedule
and trigger variables), so that a copy of the database alone never reveals a secret.

A sealed value is `v1:` followed by the URL-safe base64 of a random 96-bit nonce and the
AES-256-GCM ciphertext with its tag. The key is derived with HKDF-SHA256 from the server key
(auth/server_secret) for this one purpose, so it is never the key other secrets derive from;
losing the server key loses every sealed value, as it changes every derived token."""

from __future__ import annotations

import base64
import binascii
import os
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from kiln.auth import server_secret
from kiln.config import Settings

VERSION = "v1:"
PURPOSE = b"kiln sealing: ci variables"
NONCE_BYTES = 12


class SealError(ValueError):
    """A stored value that is not one this server sealed (another key, damaged, not sealed)."""


@lru_cache(maxsize=8)
def _cipher(secret: bytes) -> AESGCM:
    """The cipher for one server key: derived once per key and process, not per value."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE).derive(secret)
    return AESGCM(key)


def seal(settings: Settings, plaintext: str) -> str:
    """`plaintext` encrypted under the server's CI variables key, as ASCII text."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = _cipher(server_secret.key(settings)).encrypt(nonce, plaintext.encode("utf-8"), VERSION.encode())
    return VERSION + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def unseal(settings: Settings, sealed: str) -> str:
    """The plaintext of a value `seal` made; SealError for anything else."""
    if not sealed.startswith(VERSION):
        raise SealError("not a sealed value")
    try:
        raw = base64.urlsafe_b64decode(sealed[len(VERSION) :].encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise SealError("damaged sealed value") from None
    if len(raw) < NONCE_BYTES + 16:
        raise SealError("damaged sealed value")
    try:
        plain = _cipher(server_secret.key(settings)).decrypt(
            raw[:NONCE_BYTES], raw[NONCE_BYTES:], VERSION.encode()
        )
    except InvalidTag:
        raise SealError("sealed under another key, or altered") from None
    return plain.decode("utf-8")
