"""OpenPGP as kiln needs it: what an armored public key holds (its primary key, subkeys and
user ids), which key made a signature, and whether a signature checks out with a key.

Keys are read and signatures checked by GnuPG (`gpg`, `gpgv`) in a throwaway home directory:
no keyring outlives a call, so one user's key never vouches for another's. Only the issuer of
a signature is read here from its packets, to find the registered key without a process."""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import parseaddr
from pathlib import Path

PUBLIC_KEY_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
PUBLIC_KEY_END = "-----END PGP PUBLIC KEY BLOCK-----"
SIGNATURE_BEGIN = "-----BEGIN PGP SIGNATURE-----"
GPG = shutil.which("gpg") or "/usr/bin/gpg"
GPGV = shutil.which("gpgv") or "/usr/bin/gpgv"
TIMEOUT_S = 10.0
MAX_KEY_BYTES = 1 << 20
_ARMOR_BEGIN = "-----BEGIN PGP "
_ARMOR_DASHES = "-----"
_ARMOR_LABEL = re.compile(r"[A-Z ]+")


@dataclass(frozen=True, slots=True)
class UserId:
    name: str
    email: str


@dataclass(frozen=True, slots=True)
class Subkey:
    keyid: str  # 16 upper-case hex digits
    fingerprint: str  # 40 (v4) upper-case hex digits


@dataclass(slots=True)
class PublicKey:
    keyid: str
    fingerprint: str
    user_ids: list[UserId] = field(default_factory=list)  # valid ones: not revoked, self-signed
    subkeys: list[Subkey] = field(default_factory=list)
    primary_keys: int = 1  # how many primary keys the block holds (only the first is read)

    @property
    def emails(self) -> list[str]:
        return [uid.email for uid in self.user_ids if uid.email]


@dataclass(frozen=True, slots=True)
class Verification:
    good: bool  # the signature checks out with the key
    keyid: str | None  # the key (primary or subkey) that made it, as gpgv reports


@contextmanager
def _home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kiln-gpg-"))
    os.chmod(path, 0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _env(home: Path) -> dict[str, str]:
    return {"GNUPGHOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def read_public_key(armored: str) -> PublicKey | None:
    """The first primary key of an armored public key block with its valid user ids (GnuPG
    drops those without a self-signature; revoked and expired ones are left out here) and
    subkeys; None for anything GnuPG cannot read as one."""
    data = armored.encode("utf-8", errors="replace")
    if len(data) > MAX_KEY_BYTES:
        return None
    with _home() as home:
        try:
            result = subprocess.run(
                [
                    GPG,
                    "--batch",
                    "--no-tty",
                    "--no-autostart",
                    "--with-colons",
                    "--fixed-list-mode",
                    "--with-fingerprint",
                    "--with-subkey-fingerprint",
                    "--import-options",
                    "show-only,import-minimal",
                    "--import",
                ],
                input=data,
                capture_output=True,
                timeout=TIMEOUT_S,
                env=_env(home),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    return _listed_key(result.stdout.decode("utf-8", errors="replace"))


def _listed_key(listing: str) -> PublicKey | None:
    key: PublicKey | None = None
    last: str | None = None  # the record a following `fpr` belongs to
    pending_sub: str | None = None
    for line in listing.splitlines():
        fields = line.split(":")
        kind = fields[0]
        if kind == "pub":
            if key is not None:
                key.primary_keys += 1  # only the first key of a block is read
                last = None
                continue
            key = PublicKey(keyid=fields[4].upper(), fingerprint="")
            last = "pub"
        elif key is None or key.primary_keys > 1:
            continue
        elif kind == "sub":
            pending_sub = fields[4].upper()
            last = "sub"
        elif kind == "fpr" and len(fields) > 9:
            if last == "pub" and not key.fingerprint:
                key.fingerprint = fields[9].upper()
            elif last == "sub" and pending_sub is not None:
                key.subkeys.append(Subkey(pending_sub, fields[9].upper()))
                pending_sub = None
            last = None
        elif kind == "uid" and len(fields) > 9:
            if fields[1] in ("r", "e"):
                continue  # revoked or expired user ids vouch for nothing
            key.user_ids.append(_user_id(_unescaped(fields[9])))
    if key is None or not key.keyid or not key.fingerprint:
        return None
    return key


def _unescaped(value: str) -> str:
    """gpg's colon listings escape bytes as \\xNN."""
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), value)


def _armored_body(text: str) -> str | None:
    """The text between the first well-formed `-----BEGIN PGP <LABEL>-----` line and its
    `-----END PGP <LABEL>-----`. Found by linear scanning, never by a backtracking pattern
    (the text is anyone's): a BEGIN line whose END is missing ends the search."""
    at = 0
    while True:
        begin = text.find(_ARMOR_BEGIN, at)
        if begin < 0:
            return None
        label_at = begin + len(_ARMOR_BEGIN)
        close = text.find(_ARMOR_DASHES, label_at)
        if close < 0:
            return None
        label = text[label_at:close]
        after = close + len(_ARMOR_DASHES)
        if _ARMOR_LABEL.fullmatch(label) and text.startswith("\n", after):
            body_at = after + 1
            end = text.find(f"-----END PGP {label}-----", body_at)
            return None if end < 0 else text[body_at:end]
        at = label_at  # not a BEGIN line: look further on


def dearmor(text: str) -> bytes | None:
    """The binary packets of the first ASCII-armored block in `text`."""
    body = _armored_body(text.replace("\r\n", "\n"))
    if body is None:
        return None
    lines = body.split("\n")
    if "" in lines:  # armor headers (Version:, Comment:) end at the first blank line
        blank = lines.index("")
        if all(":" in line for line in lines[:blank]):
            lines = lines[blank + 1 :]
    payload = "".join(line.strip() for line in lines if line.strip() and not _is_checksum(line.strip()))
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


def _is_checksum(line: str) -> bool:
    return line.startswith("=") and len(line) == 5


def _packets(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(tag, body) of each packet, old and new header formats (RFC 4880 4.2)."""
    for tag, _, body_at, end in _packet_spans(data):
        yield tag, data[body_at:end]


def _packet_spans(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(tag, where its header starts, where its body starts, where it ends) of each packet."""
    at = 0
    while at < len(data):
        start = at
        head = data[at]
        at += 1
        if not head & 0x80:
            return
        if head & 0x40:  # new format
            tag = head & 0x3F
            first = data[at] if at < len(data) else 0
            at += 1
            if first < 192:
                size = first
            elif first < 224:
                size = ((first - 192) << 8) + data[at] + 192 if at < len(data) else 0
                at += 1
            elif first == 255:
                size = int.from_bytes(data[at : at + 4], "big")
                at += 4
            else:
                return  # partial lengths: never in a signature or key
        else:
            tag = (head >> 2) & 0x0F
            kind = head & 0x03
            width = {0: 1, 1: 2, 2: 4}.get(kind)
            if width is None:
                size = len(data) - at
            else:
                size = int.from_bytes(data[at : at + width], "big")
                at += width
        yield tag, start, at, min(at + size, len(data))
        at += size


def _first_key(data: bytes) -> bytes:
    """The packets of the first key of a binary key block: up to the next primary key."""
    seen = False
    for tag, start, _, _ in _packet_spans(data):
        if tag == 6:
            if seen:
                return data[:start]
            seen = True
    return data


def _subpackets(area: bytes) -> Iterator[tuple[int, bytes]]:
    at = 0
    while at < len(area):
        first = area[at]
        at += 1
        if first < 192:
            size = first
        elif first < 255:
            if at >= len(area):
                return
            size = ((first - 192) << 8) + area[at] + 192
            at += 1
        else:
            size = int.from_bytes(area[at : at + 4], "big")
            at += 4
        if size == 0 or at + size > len(area):
            return
        yield area[at] & 0x7F, area[at + 1 : at + size]
        at += size


def signature_issuer(signature: bytes | str) -> str | None:
    """The key id (16 upper-case hex digits) of the key that made an armored (or binary)
    signature, from its issuer or issuer-fingerprint subpacket; None if it names none."""
    raw = dearmor(signature if isinstance(signature, str) else signature.decode("utf-8", "replace"))
    if raw is None and isinstance(signature, bytes):
        raw = signature
    if not raw:
        return None
    for tag, body in _packets(raw):
        if tag != 2 or not body:
            continue
        version = body[0]
        if version == 3 and len(body) >= 15:
            return body[7:15].hex().upper()
        if version not in (4, 5) or len(body) < 6:
            return None
        hashed_size = int.from_bytes(body[4:6], "big")
        hashed = body[6 : 6 + hashed_size]
        rest = body[6 + hashed_size :]
        unhashed = rest[2 : 2 + int.from_bytes(rest[:2], "big")] if len(rest) >= 2 else b""
        for area in (hashed, unhashed):
            for kind, value in _subpackets(area):
                if kind == 16 and len(value) == 8:
                    return value.hex().upper()
                if kind == 33 and len(value) >= 21:
                    fingerprint = value[1:].hex().upper()
                    return fingerprint[-16:] if value[0] == 4 else fingerprint[:16]
        return None
    return None


def user_ids(armored_key: str) -> list[UserId]:
    """The valid user ids of the first key of an armored public key block, in order, as
    GnuPG lists them: none revoked or expired, none without a self-signature."""
    key = read_public_key(armored_key)
    return key.user_ids if key is not None else []


def _user_id(text: str) -> UserId:
    name, email = parseaddr(text)
    if "@" not in email:
        return UserId(text.strip(), "")
    return UserId(name, email.lower())


def verify(signature: bytes, signed: bytes, armored_key: str) -> Verification:
    """Whether `signature` (detached, armored) over `signed` checks out with the key: the
    first key of the block only, never another key the block holds."""
    keyring = dearmor(armored_key)
    keyring = _first_key(keyring) if keyring else keyring
    if not keyring:
        return Verification(False, None)
    with _home() as home:
        (home / "key.gpg").write_bytes(keyring)
        (home / "signature.asc").write_bytes(signature)
        (home / "signed").write_bytes(signed)
        try:
            result = subprocess.run(
                [
                    GPGV,
                    "--homedir",
                    str(home),
                    "--keyring",
                    str(home / "key.gpg"),
                    "--status-fd",
                    "1",
                    str(home / "signature.asc"),
                    str(home / "signed"),
                ],
                capture_output=True,
                timeout=TIMEOUT_S,
                env=_env(home),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return Verification(False, None)
    statuses: dict[str, str] = {}
    for line in result.stdout.decode("utf-8", errors="replace").splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "[GNUPG:]":
            statuses.setdefault(words[1], words[2].upper())
    refused = {"BADSIG", "ERRSIG", "EXPKEYSIG", "REVKEYSIG"} & statuses.keys()
    good = "GOODSIG" in statuses and not refused and result.returncode == 0
    keyid = statuses.get("GOODSIG") or next((statuses[s] for s in sorted(refused)), None)
    return Verification(good, keyid[-16:] if keyid else None)
