"""Commit signatures (GitLab's `GET /projects/:id/repository/commits/:sha/signature`): a
commit's GPG or SSH signature checked against the keys users registered, worked out when
asked.

As GitLab decides it: a signature by no registered key (primary or subkey) is `unknown_key`;
a key none of whose valid user ids (as GnuPG lists them: not revoked or expired, and
self-signed) is an address its owner verified (the primary address of a confirmed user, or
a confirmed further one) is `unverified_key`; a signature that does not check out with that
very key (gpgv must name its primary key or the subkey looked up) is `unverified`;
otherwise `verified` when the committer's address is one of the key's user ids and verified
by its owner, `same_user_different_email` when it is another address of the owner, and
`other_user` when it is nobody's the owner has.

An SSH signature (GitLab's order too; the registered key that made it is shown whatever
the status): one that does not check out is `unverified`; one by no registered signing key
(usage `signing` or `auth_and_signing`) `unknown_key`; one whose committer address is not
among the key owner's verified addresses `other_user`; else `verified`.

A signature larger than any real one (MAX_SIGNATURE_BYTES) is not read at all: a PGP one
counts as by an unknown key, an SSH one as not checking out."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from kiln import openpgp, ssh_keys
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.errors import NotFound
from kiln.git import signatures
from kiln.git.errors import RefNotFound
from kiln.git.refs import resolve_commit
from kiln.queries import emails as emails_finder
from kiln.queries import gpg_keys as gpg_finder
from kiln.queries import keys as keys_finder
from kiln.queries.keys import KeyRow
from kiln.queries.users import UserRow
from kiln.services import repositories

UNKNOWN_KEY = "unknown_key"
UNVERIFIED_KEY = "unverified_key"
UNVERIFIED = "unverified"
VERIFIED = "verified"
SAME_USER_DIFFERENT_EMAIL = "same_user_different_email"
OTHER_USER = "other_user"
SIGNING_USAGES = ("signing", "auth_and_signing")
MAX_SIGNATURE_BYTES = 64 * 1024  # a real signature is a few KiB


@dataclass(frozen=True, slots=True)
class CommitSignature:
    signature_type: str
    verification_status: str
    gpg_key_id: int | None  # the registered key, when its primary key signed
    gpg_key_primary_keyid: str | None  # the key id that signed (a subkey's, if one did)
    gpg_key_user_name: str | None
    gpg_key_user_email: str | None
    gpg_key_subkey_id: int | None  # the registered subkey, when one signed


@dataclass(frozen=True, slots=True)
class SSHCommitSignature:
    signature_type: str
    verification_status: str
    key: KeyRow | None  # the registered key that signed
    key_owner_name: str | None


def get_signature(
    db: Session, viewer: Actor | None, ident: str, sha: str, settings: Settings
) -> CommitSignature | SSHCommitSignature:
    ctx = repositories.for_read(db, viewer, ident, settings)
    if ctx.repo is None or not sha:
        raise NotFound("Commit")
    try:
        commit = resolve_commit(ctx.repo, sha)
    except RefNotFound:
        raise NotFound("Commit") from None
    signed = signatures.signature_of(commit)
    if signed is None or signed.kind not in (signatures.PGP, signatures.SSH):
        raise NotFound("Signature")
    committer = commit.committer.raw_email.decode("utf-8", errors="replace")
    if len(signed.signature) > MAX_SIGNATURE_BYTES:
        if signed.kind == signatures.SSH:
            return SSHCommitSignature(signatures.SSH, UNVERIFIED, None, None)
        return CommitSignature(signatures.PGP, UNKNOWN_KEY, None, None, None, None, None)
    if signed.kind == signatures.SSH:
        return _ssh(db, signed, committer)
    return _gpg(db, signed, committer)


def _ssh(db: Session, signed: signatures.Signed, committer_email: str) -> SSHCommitSignature:
    named = ssh_keys.signature_key(signed.signature)
    found = keys_finder.key_with_owner(db, "fingerprint_sha256", named.fingerprint_sha256) if named else None
    if found is not None and found[0].usage_type not in SIGNING_USAGES:
        found = None
    key, owner = found if found is not None else (None, None)
    if named is None or not ssh_keys.signature_checks_out(signed.signature, signed.payload):
        status = UNVERIFIED
    elif owner is None:
        status = UNKNOWN_KEY
    else:
        status = VERIFIED if committer_email.lower() in _verified_addresses(db, owner) else OTHER_USER
    return SSHCommitSignature(signatures.SSH, status, key, owner.name if owner is not None else None)


def _gpg(db: Session, signed: signatures.Signed, committer_email: str) -> CommitSignature:
    issuer = openpgp.signature_issuer(signed.signature)
    found = gpg_finder.key_for_keyid(db, issuer) if issuer else None
    if found is None:
        return CommitSignature(signatures.PGP, UNKNOWN_KEY, None, issuer, None, None, None)
    key, subkey, owner = found
    verified = _verified_addresses(db, owner)
    uids = openpgp.user_ids(key.key)
    uid_emails = {uid.email for uid in uids if uid.email}
    shown = next((uid for uid in uids if uid.email in verified), uids[0] if uids else None)
    committer = committer_email.lower()
    if not uid_emails & verified:
        status = UNVERIFIED_KEY
    elif not _checks_out(signed, key.primary_keyid, subkey.keyid if subkey is not None else None, key.key):
        status = UNVERIFIED
    elif committer in uid_emails and committer in verified:
        status = VERIFIED
    elif committer in verified:
        status = SAME_USER_DIFFERENT_EMAIL
    else:
        status = OTHER_USER
    return CommitSignature(
        signature_type=signatures.PGP,
        verification_status=status,
        gpg_key_id=None if subkey is not None else key.id,
        gpg_key_primary_keyid=subkey.keyid if subkey is not None else key.primary_keyid,
        gpg_key_user_name=shown.name if shown else None,
        gpg_key_user_email=shown.email if shown else None,
        gpg_key_subkey_id=subkey.id if subkey is not None else None,
    )


def _verified_addresses(db: Session, user: UserRow) -> set[str]:
    """The addresses GitLab counts as the user's verified ones, lower-case: the primary
    address once the user is confirmed, and the confirmed further addresses."""
    found = {address.lower() for address in emails_finder.confirmed_of(db, user.id)}
    if user.confirmed_at is not None:
        found.add(user.email.lower())
    return found


def _checks_out(
    signed: signatures.Signed, primary_keyid: str, subkey_keyid: str | None, armored_key: str
) -> bool:
    """Whether the signature checks out, made by the key that was looked up: gpgv must name
    that subkey, or the primary key, as the one that made it."""
    result = openpgp.verify(signed.signature, signed.payload, armored_key)
    expected = {primary_keyid.upper(), *([subkey_keyid.upper()] if subkey_keyid else [])}
    return result.good and result.keyid is not None and result.keyid.upper() in expected
