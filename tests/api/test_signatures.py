"""Commit signatures: GitLab's `GET /projects/:id/repository/commits/:sha/signature`, with
commits really signed by gpg and checked against the keys users registered, one rule per
test."""

from __future__ import annotations

import base64
import subprocess
from datetime import UTC, datetime

import pygit2
import pytest
from sqlalchemy import select

from kiln import openpgp
from kiln.models import GPGKey, GPGKeySubkey
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


def confirmed(make, **fields):
    """A user whose primary address is confirmed, as kiln creates users through the API
    (administrators' creation; sign-up with e-mail confirmation off); `make.user` leaves it
    unconfirmed."""
    return make.user(confirmed_at=datetime.now(UTC), **fields)


def commit_with_gpgsig(settings, project: dict, gpgsig: str, *, email: str = ALICE) -> str:
    """A commit by `email` whose gpgsig header is `gpgsig` as it is. Its id."""
    repo = pygit2.Repository(str(repositories.store(settings).path(project["id"])))
    parent = repo.branches["main"].peel(pygit2.Commit)
    person = pygit2.Signature("Alice Example", email)
    content = repo.create_commit_string(person, person, "crafted\n", parent.tree.id, [parent.id])
    return str(repo.create_commit_with_signature(content, gpgsig, "gpgsig"))


def signature_of(api, caller, project: dict, sha: str):
    return api(caller).get(f"/projects/{project['id']}/repository/commits/{sha}/signature")


def register(api, user, gpg: Gpg, fingerprint: str) -> dict:
    return api(user).post("/user/gpg_keys", json={"key": gpg.export(fingerprint)}).json()


# ----------------------------------------------------------------------------- verified


def test_a_commit_signed_by_a_registered_primary_key_is_verified(api, make, settings, gpg, alice):
    u = confirmed(make, email=ALICE)
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
    u = confirmed(make, email=ALICE)
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
    u = confirmed(make, email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice, tamper=True)
    assert signature_of(api, u, p, sha).json()["verification_status"] == "unverified"


def test_a_committer_address_of_the_same_user_but_not_the_keys(api, make, settings, gpg, alice):
    u = confirmed(make, email=ALICE)
    api("root").post(f"/users/{u.id}/emails", json={"email": "alice@work.example", "skip_confirmation": True})
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice, email="alice@work.example")
    assert signature_of(api, u, p, sha).json()["verification_status"] == "same_user_different_email"


def test_a_committer_address_the_keys_owner_does_not_have(api, make, settings, gpg, alice):
    u = confirmed(make, email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice, email="mallory@example.com")
    assert signature_of(api, u, p, sha).json()["verification_status"] == "other_user"


def test_after_the_key_is_revoked_its_signatures_are_by_an_unknown_key(api, make, settings, gpg, alice):
    u = confirmed(make, email=ALICE)
    key = register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, f"{alice}!")
    api(u).post(f"/user/gpg_keys/{key['id']}/revoke")
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["gpg_key_id"]) == ("unknown_key", None)


# ----------------------------------------------------------------------------- whose addresses


def test_an_unconfirmed_users_primary_address_verifies_nothing(api, make, settings, gpg, alice):
    u = make.user(email=ALICE)  # confirmed_at is null
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice)
    assert signature_of(api, u, p, sha).json()["verification_status"] == "unverified_key"


def test_a_user_an_administrator_created_is_confirmed_and_verifies(api, make, settings, gpg, alice):
    created = api("root").post(
        "/users",
        json={"email": ALICE, "username": "alice", "name": "Alice Example", "password": "A-l0ng-passw0rd!"},
    )
    assert (created.status_code, created.json()["confirmed_at"] is not None) == (201, True)
    p = new_project(api, make, confirmed(make))
    api("root").post(f"/users/{created.json()['id']}/gpg_keys", json={"key": gpg.export(alice)})
    sha = signed_commit(settings, p, gpg, alice)
    assert signature_of(api, "root", p, sha).json()["verification_status"] == "verified"


def test_an_ssh_signature_by_an_unconfirmed_primary_address_is_other_user(api, make, settings, made):
    u = make.user(email=ALICE)  # confirmed_at is null
    add_ssh_key(api, u, made["ed25519"])
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path)
    assert signature_of(api, u, p, sha).json()["verification_status"] == "other_user"


@pytest.fixture(scope="session")
def carol(gpg: Gpg) -> str:
    """A key for carol@example.com with a revoked user id for carol.old@example.com."""
    fingerprint = gpg.generate("Carol Example <carol@example.com>")
    gpg.add_uid(fingerprint, "Carol Old <carol.old@example.com>")
    gpg.run("--quick-revoke-uid", fingerprint, "Carol Old <carol.old@example.com>")
    return fingerprint


def test_a_revoked_user_id_vouches_for_no_address(api, make, settings, gpg, carol):
    u = confirmed(make, email="carol.old@example.com")
    register(api, u, gpg, carol)
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, carol, email="carol.old@example.com")
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["gpg_key_user_email"]) == (
        "unverified_key",
        "carol@example.com",
    )


def _armored(packets: bytes) -> str:
    crc = 0xB704CE
    for byte in packets:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    text = base64.b64encode(packets).decode()
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    checksum = base64.b64encode((crc & 0xFFFFFF).to_bytes(3, "big")).decode()
    return "\n".join([openpgp.PUBLIC_KEY_BEGIN, "", *lines, f"={checksum}", openpgp.PUBLIC_KEY_END])


def test_a_user_id_without_a_self_signature_vouches_for_no_address(api, make, settings, gpg, alice):
    uid = b"Mallory <mallory@example.com>"
    doctored = _armored(gpg.run("--export", alice) + bytes([0xC0 | 13, len(uid)]) + uid)
    u = confirmed(make, email="mallory@example.com")
    r = api(u).post("/user/gpg_keys", json={"key": doctored})
    assert r.status_code == 201
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, alice, email="mallory@example.com")
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["gpg_key_user_email"]) == ("unverified_key", ALICE)


# ----------------------------------------------------------------------------- which key signed


def test_only_the_key_looked_up_may_have_made_the_signature(
    api, make, settings, gpg, alice, bob, db, monkeypatch
):
    """A stored block of two keys (kept from before such blocks were refused) and a signature
    by the second whose issuer kiln reads as the first: gpgv must not vouch for it."""
    u = confirmed(make, email=ALICE)
    block = gpg.run("--armor", "--export", alice, bob).decode().strip()
    db.add(GPGKey(user_id=u.id, key=block, primary_keyid=alice[-16:], fingerprint=alice))
    db.commit()
    monkeypatch.setattr(openpgp, "signature_issuer", lambda signature: alice[-16:])
    p = new_project(api, make, u)
    sha = signed_commit(settings, p, gpg, f"{bob}!")
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["gpg_key_primary_keyid"]) == ("unverified", alice[-16:])


# ----------------------------------------------------------------------------- crafted signatures

JUNK = "-----BEGIN PGP A-----\n"


def test_a_signature_of_repeated_armor_lines_answers_unknown_key(api, make, settings):
    u = confirmed(make, email=ALICE)
    p = new_project(api, make, u)
    for lines in (2_900, 12_000):  # under and over the size kiln reads
        sha = commit_with_gpgsig(settings, p, openpgp.SIGNATURE_BEGIN + "\n" + JUNK * lines)
        r = signature_of(api, u, p, sha)
        assert (r.status_code, r.json()["verification_status"], r.json()["gpg_key_primary_keyid"]) == (
            200,
            "unknown_key",
            None,
        )


def test_a_signature_larger_than_any_real_one_is_not_read(api, make, settings, gpg, alice):
    u = confirmed(make, email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u)
    repo = pygit2.Repository(str(repositories.store(settings).path(p["id"])))
    parent = repo.branches["main"].peel(pygit2.Commit)
    person = pygit2.Signature("Alice Example", ALICE)
    content = repo.create_commit_string(person, person, "padded\n", parent.tree.id, [parent.id])
    padded = gpg.sign(alice, content.encode()).decode() + JUNK * 4_000
    sha = str(repo.create_commit_with_signature(content, padded, "gpgsig"))
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["gpg_key_primary_keyid"]) == ("unknown_key", None)


def test_dearmor_stops_at_a_begin_line_without_its_end():
    assert openpgp.dearmor(openpgp.SIGNATURE_BEGIN + "\n" + JUNK * 5_000) is None


# ----------------------------------------------------------------------------- SSH


def add_ssh_key(api, user, key, usage_type: str = "auth_and_signing") -> dict:
    return (
        api(user)
        .post("/user/keys", json={"title": "signing", "key": key.text, "usage_type": usage_type})
        .json()
    )


def test_a_commit_signed_with_a_registered_ssh_key_is_verified(api, make, settings, made):
    u = confirmed(make, email=ALICE, name="Alice Example")
    key = add_ssh_key(api, u, made["ed25519"])
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path)
    r = signature_of(api, u, p, sha)
    assert (r.status_code, r.json()) == (
        200,
        {"signature_type": "SSH", "verification_status": "verified", "key": key, "commit_source": "gitaly"},
    )


def test_an_ssh_signature_by_no_registered_key_is_by_an_unknown_key(api, make, settings, made):
    u = confirmed(make, email=ALICE)
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path)
    body = signature_of(api, u, p, sha).json()
    assert (body["verification_status"], body["key"]) == ("unknown_key", None)


def test_an_ssh_key_registered_for_authentication_only_signs_nothing(api, make, settings, made):
    u = confirmed(make, email=ALICE)
    add_ssh_key(api, u, made["ed25519"], usage_type="auth")
    p = new_project(api, make, u)
    sha = ssh_signed_commit(settings, p, made["ed25519"].path)
    assert signature_of(api, u, p, sha).json()["verification_status"] == "unknown_key"


def test_an_ssh_signature_for_a_committer_who_is_someone_else(api, make, settings, made):
    u = confirmed(make, email=ALICE)
    other = make.user()
    add_ssh_key(api, u, made["ed25519"])
    p = new_project(api, make, u)
    for address in (other.email, "nobody@example.net"):
        sha = ssh_signed_commit(settings, p, made["ed25519"].path, email=address)
        assert signature_of(api, u, p, sha).json()["verification_status"] == "other_user"


def test_an_ssh_signature_over_other_bytes_is_unverified(api, make, settings, made):
    u = confirmed(make, email=ALICE)
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
    u = confirmed(make, email=ALICE)
    register(api, u, gpg, alice)
    p = new_project(api, make, u, visibility="public")
    sha = signed_commit(settings, p, gpg, alice)
    assert signature_of(api, None, p, sha).json()["verification_status"] == "verified"


def test_a_private_projects_signatures_are_hidden_from_outsiders(api, make, settings, gpg, alice):
    u = confirmed(make, email=ALICE)
    p = new_project(api, make, u, visibility="private")
    sha = signed_commit(settings, p, gpg, alice)
    r = signature_of(api, make.user(), p, sha)
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


# ----------------------------------------------------------------------------- cost


@pytest.mark.parametrize("registered", [False, True])
def test_a_signature_costs_a_fixed_number_of_statements(api, make, settings, runtime, gpg, alice, registered):
    u = confirmed(make, email=ALICE)
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
