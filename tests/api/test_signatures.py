"""Commit signatures: GitLab's `GET /projects/:id/repository/commits/:sha/signature`, with
commits really signed by gpg and checked against the keys users registered, one rule per
test."""

from __future__ import annotations

import subprocess

import pygit2
import pytest
from sqlalchemy import select

from kiln.models import GPGKeySubkey
from kiln.services import repositories
from tests.api import test_gpg_keys, test_keys
from tests.api.test_gpg_keys import Gpg
from tests.repositories import new_project
from tests.statements import count

# The session's gpg home and its keys, shared with the GPG key tests.
gpg = test_gpg_keys.gpg
alice = test_gpg_keys.alice
bob = test_gpg_keys.bob
# The session's SSH keys, shared with the SSH key tests.
made = test_keys.made

ALICE = "alice@example.com"


def signed_commit(
    settings, project: dict, gpg: Gpg, signer: str, *, email: str = ALICE, tamper: bool = False
) -> str:
    """A commit by `email` on a new branch of the project, signed by `signer` (a key id or
    fingerprint; `!` at its end picks that very key); `tamper`: the signature is over other
    bytes than the commit's. Its id."""
    repo = pygit2.Repository(str(repositories.store(settings).path(project["id"])))
    parent = repo.branches["main"].peel(pygit2.Commit)
    person = pygit2.Signature("Alice Example", email)
    content = repo.create_commit_string(person, person, "signed work\n", parent.tree.id, [parent.id])
    signed = (content + "tampered") if tamper else content
    signature = gpg.sign(signer, signed.encode()).decode()
    oid = repo.create_commit_with_signature(content, signature, "gpgsig")
    repo.references.create(f"refs/heads/signed-{str(oid)[:8]}", oid)
    return str(oid)


def ssh_signed_commit(settings, project: dict, key_path, *, email: str = ALICE, tamper: bool = False) -> str:
    """A commit by `email` signed as `git commit -S` signs with gpg.format=ssh (`ssh-keygen
    -Y sign -n git`) with the private key at `key_path`. Its id."""
    repo = pygit2.Repository(str(repositories.store(settings).path(project["id"])))
    parent = repo.branches["main"].peel(pygit2.Commit)
    person = pygit2.Signature("Alice Example", email)
    content = repo.create_commit_string(person, person, "ssh signed\n", parent.tree.id, [parent.id])
    signed = (content + "tampered") if tamper else content
    signature = subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", "git", "-f", str(key_path)],
        input=signed.encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    oid = repo.create_commit_with_signature(content, signature, "gpgsig")
    return str(oid)


def signature_of(api, caller, project: dict, sha: str):
    return api(caller).get(f"/projects/{project['id']}/repository/commits/{sha}/signature")


def register(api, user, gpg: Gpg, fingerprint: str) -> dict:
    return api(user).post("/user/gpg_keys", json={"key": gpg.export(fingerprint)}).json()


# ----------------------------------------------------------------------------- verified


def test_a_commit_signed_by_a_registered_primary_key_is_verified(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)
    key = register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, f"{alice}!")
    r = signature_of(api, u, p, sha)
    assert (r.status_code, r.json()) == (
        200,
        {
            "signature_type": "PGP",
            "verification_status": "verified",
            "gpg_key_id": key["id"],
            "gpg_key_primary_keyid": alice[-16:],
            "gpg_key_user_name": "Alice Example",
            "gpg_key_user_email": ALICE,
            "gpg_key_subkey_id": None,
            "commit_source": "gitaly",
        },
    )


def test_a_commit_signed_by_a_subkey_names_the_subkey(api, make, settings, gpg, alice, db):
    u = make.user(email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sub_keyid, _ = gpg.subkeys(alice)[0]
    sha = signed_commit(settings, p, gpg, f"{sub_keyid}!")
    body = signature_of(api, u, p, sha).json()
    subkey_id = db.scalar(select(GPGKeySubkey.id).where(GPGKeySubkey.keyid == sub_keyid))
    assert body["verification_status"] == "verified"
    assert (body["gpg_key_id"], body["gpg_key_subkey_id"], body["gpg_key_primary_keyid"]) == (
        None,
        subkey_id,
        sub_keyid,
    )


def test_a_key_whose_address_is_a_confirmed_further_address_verifies(api, make, settings, gpg, alice):
    u = make.user(email="alice.work@example.org")
    api("root").post(f"/users/{u.id}/emails", json={"email": ALICE, "skip_confirmation": True})
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice)
    assert signature_of(api, u, p, sha).json()["verification_status"] == "verified"


# ----------------------------------------------------------------------------- not verified


def test_a_commit_signed_by_no_registered_key_is_by_an_unknown_key(api, make, settings, gpg, bob):
    u = make.user()
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, f"{bob}!", email="bob@example.com")
    assert signature_of(api, u, p, sha).json() == {
        "signature_type": "PGP",
        "verification_status": "unknown_key",
        "gpg_key_id": None,
        "gpg_key_primary_keyid": bob[-16:],
        "gpg_key_user_name": None,
        "gpg_key_user_email": None,
        "gpg_key_subkey_id": None,
        "commit_source": "gitaly",
    }


def test_a_key_none_of_whose_addresses_its_owner_verified_is_unverified(api, make, settings, gpg, alice):
    u = make.user(email="someone.else@example.org")
    add = api(u).post("/user/emails", json={"email": ALICE})  # added, never confirmed
    assert add.status_code == 201
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice)
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["gpg_key_user_email"]) == ("unverified_key", ALICE)


def test_a_signature_over_other_bytes_is_unverified(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice, tamper=True)
    assert signature_of(api, u, p, sha).json()["verification_status"] == "unverified"


def test_a_committer_address_of_the_same_user_but_not_the_keys(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)
    api("root").post(f"/users/{u.id}/emails", json={"email": "alice@work.example", "skip_confirmation": True})
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice, email="alice@work.example")
    assert signature_of(api, u, p, sha).json()["verification_status"] == "same_user_different_email"


def test_a_committer_address_the_keys_owner_does_not_have(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice, email="mallory@example.com")
    assert signature_of(api, u, p, sha).json()["verification_status"] == "other_user"


def test_after_the_key_is_revoked_its_signatures_are_by_an_unknown_key(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)
    key = register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, f"{alice}!")
    api(u).post(f"/user/gpg_keys/{key['id']}/revoke")
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["gpg_key_id"]) == ("unknown_key", None)


# ----------------------------------------------------------------------------- SSH


def add_ssh_key(api, user, key, usage_type: str = "auth_and_signing") -> dict:
    return (
        api(user)
        .post("/user/keys", json={"title": "signing", "key": key.text, "usage_type": usage_type})
        .json()
    )


def test_a_commit_signed_with_a_registered_ssh_key_is_verified(api, make, settings, made):
    u = make.user(email=ALICE, name="Alice Example")
    key = add_ssh_key(api, u, made["ed25519"])
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path)
    r = signature_of(api, u, p, sha)
    assert (r.status_code, r.json()) == (
        200,
        {"signature_type": "SSH", "verification_status": "verified", "key": key, "commit_source": "gitaly"},
    )


def test_an_ssh_signature_by_no_registered_key_is_by_an_unknown_key(api, make, settings, made):
    u = make.user(email=ALICE)
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path)
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["key"]) == ("unknown_key", None)


def test_an_ssh_key_registered_for_authentication_only_signs_nothing(api, make, settings, made):
    u = make.user(email=ALICE)
    add_ssh_key(api, u, made["ed25519"], usage_type="auth")
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path)
    assert signature_of(api, u, p, sha).json()["verification_status"] == "unknown_key"


def test_an_ssh_signature_for_a_committer_who_is_someone_else(api, make, settings, made):
    u = make.user(email=ALICE)
    other = make.user()
    add_ssh_key(api, u, made["ed25519"])
    p = new_project(api, make, u)
    for address in (other.email, "nobody@example.net"):
        sha = ssh_signed_commit(settings, p, made["ed25519"].path, email=address)
        assert signature_of(api, u, p, sha).json()["verification_status"] == "other_user"


def test_an_ssh_signature_over_other_bytes_is_unverified(api, make, settings, made):
    u = make.user(email=ALICE)
    key = add_ssh_key(api, u, made["ed25519"])
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path, tamper=True)
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["key"]) == ("unverified", key)


# ----------------------------------------------------------------------------- not found


def test_an_unsigned_commit_has_no_signature(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = signature_of(api, u, p, "main")
    assert (r.status_code, r.json()) == (404, {"message": "404 Signature Not Found"})


def test_an_unknown_commit(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = signature_of(api, u, p, "0" * 40)
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


def test_anyone_reads_signatures_in_a_public_project(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u, visibility="public")
    sha = signed_commit(settings, p, gpg, alice)
    assert signature_of(api, None, p, sha).json()["verification_status"] == "verified"


def test_a_private_projects_signatures_are_hidden_from_outsiders(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)
    p = new_project(api, make, u, visibility="private")
    sha = signed_commit(settings, p, gpg, alice)
    r = signature_of(api, make.user(), p, sha)
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


# ----------------------------------------------------------------------------- cost


@pytest.mark.parametrize("registered", [False, True])
def test_a_signature_costs_a_fixed_number_of_statements(api, make, settings, runtime, gpg, alice, registered):
    u = make.user(email=ALICE)
    if registered:
        register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice)
    cost = count(
        runtime,
        lambda: signature_of(api, u, p, sha),
        leaving_out=("application_settings",),  # read by the rate limits' settings check, not the route
    )
    assert cost <= (5 if registered else 4)
