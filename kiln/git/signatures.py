"""A commit's signature as git keeps it (the `gpgsig` header) and the bytes it signs: the
commit object without that header."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

PGP = "PGP"
SSH = "SSH"
X509 = "X509"
_KINDS = (
    (b"-----BEGIN PGP SIGNATURE-----", PGP),
    (b"-----BEGIN SSH SIGNATURE-----", SSH),
    (b"-----BEGIN SIGNED MESSAGE-----", X509),
)


@dataclass(frozen=True, slots=True)
class Signed:
    kind: str | None  # PGP, SSH, X509, or None for a signature of no kind kiln knows
    signature: bytes
    payload: bytes  # what was signed


def signature_of(commit: pygit2.Commit) -> Signed | None:
    """The commit's signature, or None for an unsigned commit."""
    signature, payload = commit.gpg_signature
    if not signature or payload is None:
        return None
    head = signature.lstrip()
    kind = next((name for prefix, name in _KINDS if head.startswith(prefix)), None)
    return Signed(kind, signature, payload)
