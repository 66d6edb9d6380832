"""The commit signature views (GitLab's CommitSignature entity: its GPG fields, or its SSH
verification status and key)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kiln.entities.keys import ssh_key

if TYPE_CHECKING:
    from kiln.queries.keys import KeyRow

# Where GitLab says the signature was read from; kiln reads commits itself, as Gitaly does.
COMMIT_SOURCE = "gitaly"


class GPGSignatureRecord(Protocol):
    """What the view shows of a checked GPG signature (services.signatures builds one)."""

    @property
    def signature_type(self) -> str: ...
    @property
    def verification_status(self) -> str: ...
    @property
    def gpg_key_id(self) -> int | None: ...
    @property
    def gpg_key_primary_keyid(self) -> str | None: ...
    @property
    def gpg_key_user_name(self) -> str | None: ...
    @property
    def gpg_key_user_email(self) -> str | None: ...
    @property
    def gpg_key_subkey_id(self) -> int | None: ...


class SSHSignatureRecord(Protocol):
    """What the view shows of a checked SSH signature."""

    @property
    def signature_type(self) -> str: ...
    @property
    def verification_status(self) -> str: ...
    @property
    def key(self) -> KeyRow | None: ...
    @property
    def key_owner_name(self) -> str | None: ...


def gpg_commit_signature(s: GPGSignatureRecord) -> dict[str, Any]:
    return {
        "signature_type": s.signature_type,
        "verification_status": s.verification_status,
        "gpg_key_id": s.gpg_key_id,
        "gpg_key_primary_keyid": s.gpg_key_primary_keyid,
        "gpg_key_user_name": s.gpg_key_user_name,
        "gpg_key_user_email": s.gpg_key_user_email,
        "gpg_key_subkey_id": s.gpg_key_subkey_id,
        "commit_source": COMMIT_SOURCE,
    }


def ssh_commit_signature(s: SSHSignatureRecord, host: str) -> dict[str, Any]:
    key = ssh_key(s.key, s.key_owner_name or "", host) if s.key is not None else None
    return {
        "signature_type": s.signature_type,
        "verification_status": s.verification_status,
        "key": key,
        "commit_source": COMMIT_SOURCE,
    }
