"""OpenSSH public keys as users paste them (`ssh-ed25519 AAAA… comment`): the key's type and
size read from its wire form (RFC 4253 strings and mpints), and the fingerprints OpenSSH
prints for it. Nothing here trusts the outer type name: the blob's own must match.

Also SSH signatures (`ssh-keygen -Y sign`, as `git commit -S` makes them with
gpg.format=ssh): the key one names, and whether it checks out (by ssh-keygen)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Outer type name -> the technology GitLab's settings name it by (`<name>_key_restriction`).
ALGORITHMS: dict[str, str] = {
    "ssh-rsa": "rsa",
    "ssh-dss": "dsa",
    "ecdsa-sha2-nistp256": "ecdsa",
    "ecdsa-sha2-nistp384": "ecdsa",
    "ecdsa-sha2-nistp521": "ecdsa",
    "ssh-ed25519": "ed25519",
    "sk-ecdsa-sha2-nistp256@openssh.com": "ecdsa_sk",
    "sk-ssh-ed25519@openssh.com": "ed25519_sk",
}
# In the order GitLab lists the allowed types.
TECHNOLOGIES = ("rsa", "dsa", "ecdsa", "ed25519", "ecdsa_sk", "ed25519_sk")
_CURVE_BITS = {"nistp256": 256, "nistp384": 384, "nistp521": 521}
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
MAX_BLOB = 16 * 1024  # far above any real public key (an RSA-16384 key is ~2 KiB)
MAX_PIECES = 64  # lines a pasted key's base64 may be broken into


class InvalidKey(ValueError):
    """Text that is no OpenSSH public key kiln can read."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    algorithm: str  # the type name, e.g. "ssh-ed25519"
    technology: str  # rsa, dsa, ecdsa, ed25519, ecdsa_sk, ed25519_sk
    bits: int
    blob: bytes  # the wire form, what fingerprints are taken of
    comment: str

    @property
    def text(self) -> str:
        """The key as kept: type, base64, and the comment if there is one."""
        body = f"{self.algorithm} {base64.b64encode(self.blob).decode()}"
        return f"{body} {self.comment}" if self.comment else body

    @property
    def fingerprint_md5(self) -> str:
        digest = hashlib.md5(self.blob, usedforsecurity=False).hexdigest()
        return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))

    @property
    def fingerprint_sha256(self) -> str:
        """`SHA256:` and the digest in base64 without padding, as `ssh-keygen -l` prints it."""
        return "SHA256:" + base64.b64encode(hashlib.sha256(self.blob).digest()).decode().rstrip("=")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def string(self) -> bytes:
        if self.at + 4 > len(self.data):
            raise InvalidKey("truncated")
        size = int.from_bytes(self.data[self.at : self.at + 4], "big")
        self.at += 4
        if self.at + size > len(self.data):
            raise InvalidKey("truncated")
        value = self.data[self.at : self.at + size]
        self.at += size
        return value

    def mpint(self) -> int:
        raw = self.string()
        if raw and raw[0] & 0x80:
            raise InvalidKey("negative integer")
        return int.from_bytes(raw, "big")

    def end(self) -> None:
        if self.at != len(self.data):
            raise InvalidKey("trailing bytes")


def _bits(algorithm: str, blob: bytes) -> int:
    """The key's size, reading the whole blob: its inner type must be `algorithm`."""
    r = _Reader(blob)
    if r.string() != algorithm.encode():
        raise InvalidKey("inner type differs")
    technology = ALGORITHMS[algorithm]
    if technology == "rsa":
        e, n = r.mpint(), r.mpint()
        if e < 3 or n == 0:
            raise InvalidKey("bad RSA key")
        bits = n.bit_length()
    elif technology == "dsa":
        p = r.mpint()
        for _ in range(3):
            r.mpint()
        bits = p.bit_length()
    elif technology in ("ecdsa", "ecdsa_sk"):
        curve = r.string().decode("ascii", errors="replace")
        if not algorithm.split("@", maxsplit=1)[0].endswith(curve) or curve not in _CURVE_BITS:
            raise InvalidKey("curve differs")
        point = r.string()
        if not point or point[0] != 4:
            raise InvalidKey("bad point")
        bits = _CURVE_BITS[curve]
        if technology == "ecdsa_sk":
            r.string()  # the application, "ssh:" for most
    else:  # ed25519, ed25519_sk
        if len(r.string()) != 32:
            raise InvalidKey("bad Ed25519 key")
        bits = 256
        if technology == "ed25519_sk":
            r.string()
    r.end()
    if bits == 0:
        raise InvalidKey("empty key")
    return bits


def _decoded(text: str) -> bytes | None:
    if not _BASE64.match(text) or len(text) % 4:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def parse(text: str) -> PublicKey:
    """A public key from what a user pasted. Base64 broken over several lines (copied from a
    terminal) is joined again; the comment, whatever follows the key, is kept."""
    words = text.split()
    if len(words) < 2 or words[0] not in ALGORITHMS:
        raise InvalidKey("unknown type")
    algorithm, parts = words[0], words[1:]
    joined = ""
    for end, part in enumerate(parts[:MAX_PIECES], start=1):
        joined += part
        if len(joined) > MAX_BLOB * 2:
            break
        blob = _decoded(joined)
        if blob is None:
            continue
        try:
            bits = _bits(algorithm, blob)
        except InvalidKey:
            continue
        return PublicKey(algorithm, ALGORITHMS[algorithm], bits, blob, " ".join(parts[end:]))
    raise InvalidKey("undecodable")


def sanitized(text: str) -> str:
    """The text kept for a key: the parsed key's own form, or the stripped text as sent."""
    try:
        return parse(text).text
    except InvalidKey:
        return text.strip()


# ----------------------------------------------------------------------------- signatures

SSH_SIGNATURE_BEGIN = b"-----BEGIN SSH SIGNATURE-----"
SSH_SIGNATURE_END = b"-----END SSH SIGNATURE-----"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
TIMEOUT_S = 10.0


def _signature_blob(armored: bytes) -> bytes | None:
    text = armored.strip()
    if not text.startswith(SSH_SIGNATURE_BEGIN) or not text.endswith(SSH_SIGNATURE_END):
        return None
    body = b"".join(text[len(SSH_SIGNATURE_BEGIN) : -len(SSH_SIGNATURE_END)].split())
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None


def signature_key(armored: bytes) -> PublicKey | None:
    """The public key an armored SSH signature (`ssh-keygen -Y sign`) names as its signer."""
    blob = _signature_blob(armored)
    if blob is None or not blob.startswith(b"SSHSIG"):
        return None
    r = _Reader(blob[6:] if len(blob) > 10 else b"")
    try:
        r.at = 4  # the version
        key_blob = r.string()
        algorithm = _Reader(key_blob).string().decode("ascii")
        if algorithm not in ALGORITHMS:
            return None
        return PublicKey(algorithm, ALGORITHMS[algorithm], _bits(algorithm, key_blob), key_blob, "")
    except (InvalidKey, UnicodeDecodeError):
        return None


def signature_checks_out(armored: bytes, signed: bytes, namespace: str = "git") -> bool:
    """Whether the SSH signature over `signed` is good for the key it names (which key that
    is, and whose, the caller decides)."""
    home = Path(tempfile.mkdtemp(prefix="kiln-sshsig-"))
    try:
        (home / "signature").write_bytes(armored)
        result = subprocess.run(
            [SSH_KEYGEN, "-Y", "check-novalidate", "-n", namespace, "-s", str(home / "signature")],
            input=signed,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return result.returncode == 0
