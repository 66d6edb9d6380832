"""GPG keys: GitLab's Users API "GPG keys" (/user/gpg_keys, /users/:id/gpg_keys, revocation),
with real keys made by gpg in a throwaway home, one rule per test."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from kiln.models import GPGKey, GPGKeySubkey
from tests.bodies import FORBIDDEN
from tests.statements import count

INVALID = (
    "is invalid. A valid public GPG key begins with '-----BEGIN PGP PUBLIC KEY BLOCK-----' "
    "and ends with '-----END PGP PUBLIC KEY BLOCK-----'"
)
GPG_KEY_NOT_FOUND = {"message": "404 GPG Key Not Found"}


class Gpg:
    """gpg in its own home: makes keys (with a signing subkey if asked), exports, signs."""

    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir(mode=0o700, exist_ok=True)

    def run(self, *args: str, input: bytes | None = None) -> bytes:
        env = {**os.environ, "GNUPGHOME": str(self.home)}
        out = subprocess.run(
            ["gpg", "--batch", "--no-tty", "--pinentry-mode", "loopback", "--passphrase", "", *args],
            input=input,
            capture_output=True,
            env=env,
            check=True,
        )
        return out.stdout

    def generate(self, uid: str, *, subkey: bool = False) -> str:
        """A new key for `uid` ("Name <email>"): its fingerprint."""
        self.run("--quick-gen-key", uid, "ed25519", "sign", "never")
        listing = self.run("--with-colons", "--list-keys", uid).decode()
        fingerprint = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr"))
        if subkey:
            self.run("--quick-add-key", fingerprint, "ed25519", "sign", "never")
        return fingerprint

    def add_uid(self, fingerprint: str, uid: str) -> None:
        self.run("--quick-add-uid", fingerprint, uid)

    def subkeys(self, fingerprint: str) -> list[tuple[str, str]]:
        """(keyid, fingerprint) of each subkey."""
        listing = self.run("--with-colons", "--with-subkey-fingerprint", "--list-keys", fingerprint).decode()
        found, current = [], None
        for line in listing.splitlines():
            fields = line.split(":")
            if fields[0] == "sub":
                current = fields[4]
            elif fields[0] == "fpr" and current is not None:
                found.append((current, fields[9]))
                current = None
        return found

    def export(self, fingerprint: str) -> str:
        return self.run("--armor", "--export", fingerprint).decode()

    def sign(self, signer: str, data: bytes) -> bytes:
        """A detached armored signature by `signer` (a key id; `!` picks that very subkey)."""
        return self.run("--armor", "--detach-sign", "--local-user", signer, input=data)


@pytest.fixture(scope="session")
def gpg() -> Iterator[Gpg]:
    home = Path(tempfile.mkdtemp(prefix="kiln-test-gpg-"))
    try:
        yield Gpg(home / "home")
    finally:
        subprocess.run(["gpgconf", "--homedir", str(home / "home"), "--kill", "all"], check=False)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def alice(gpg: Gpg) -> str:
    """A key with a signing subkey, for alice@example.com."""
    return gpg.generate("Alice Example <alice@example.com>", subkey=True)


@pytest.fixture(scope="session")
def bob(gpg: Gpg) -> str:
    return gpg.generate("Bob Example <bob@example.com>")


def add(api, caller, key: str):
    return api(caller).post("/user/gpg_keys", json={"key": key})


def key_rows(db) -> int:
    return db.scalar(select(func.count()).select_from(GPGKey))


# ----------------------------------------------------------------------------- adding


def test_adding_a_key_answers_it_as_gitlab_does(api, make, gpg, alice):
    armored = gpg.export(alice)
    r = add(api, make.user(), armored)
    body = r.json()
    assert r.status_code == 201
    assert list(body) == ["id", "key", "created_at"]
    assert body["key"] == armored.strip()


def test_the_primary_key_and_subkeys_are_kept(api, make, gpg, alice, db):
    add(api, make.user(), gpg.export(alice))
    row = db.scalars(select(GPGKey)).one()
    assert (row.fingerprint, row.primary_keyid) == (alice, alice[-16:])
    subkeys = db.execute(select(GPGKeySubkey.keyid, GPGKeySubkey.fingerprint)).all()
    assert [tuple(s) for s in subkeys] == gpg.subkeys(alice)


def test_the_key_is_required(api, make):
    r = api(make.user()).post("/user/gpg_keys", json={})
    assert (r.status_code, r.json()) == (400, {"error": "key is missing"})


def test_text_that_is_no_armored_public_key_is_refused(api, make, db):
    r = add(api, make.user(), "ssh-ed25519 AAAA")
    assert (r.status_code, r.json()) == (400, {"message": {"key": [INVALID]}})
    assert key_rows(db) == 0


def test_a_blank_key_is_refused(api, make):
    assert add(api, make.user(), " ").json() == {"message": {"key": ["can't be blank", INVALID]}}


def test_an_armored_block_gpg_cannot_read_is_refused(api, make, db):
    broken = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n-----END PGP PUBLIC KEY BLOCK-----"
    r = add(api, make.user(), broken)
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"fingerprint": ["can't be blank"], "primary_keyid": ["can't be blank"]}},
    )
    assert key_rows(db) == 0


def test_a_key_someone_already_added_is_refused(api, make, gpg, alice, db):
    add(api, make.user(), gpg.export(alice))
    r = add(api, make.user(), gpg.export(alice))
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["has already been taken"]}})
    assert key_rows(db) == 1


def test_the_same_key_in_other_armor_is_still_taken(api, make, gpg, alice):
    armored = gpg.export(alice)
    add(api, make.user(), armored)
    lines = armored.strip().splitlines()
    reworded = "\n".join([lines[0], "Comment: exported again", *lines[1:]])
    assert add(api, make.user(), reworded).json() == {
        "message": {"fingerprint": ["has already been taken"], "primary_keyid": ["has already been taken"]}
    }


# ----------------------------------------------------------------------------- own keys


def test_own_keys_are_listed_and_shown(api, make, gpg, alice, bob):
    u = make.user()
    first = add(api, u, gpg.export(alice)).json()
    second = add(api, u, gpg.export(bob)).json()
    r = api(u).get("/user/gpg_keys")
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [first, second], "2")
    assert api(u).get(f"/user/gpg_keys/{first['id']}").json() == first


def test_someone_elses_key_is_not_found_under_user(api, make, gpg, alice):
    key = add(api, make.user(), gpg.export(alice)).json()
    other = make.user()
    r = api(other).get(f"/user/gpg_keys/{key['id']}")
    assert (r.status_code, r.json()) == (404, GPG_KEY_NOT_FOUND)
    assert api(other).delete(f"/user/gpg_keys/{key['id']}").json() == GPG_KEY_NOT_FOUND
    assert api(other).post(f"/user/gpg_keys/{key['id']}/revoke").json() == GPG_KEY_NOT_FOUND


def test_deleting_an_own_key_removes_its_subkeys_too(api, make, gpg, alice, db):
    u = make.user()
    key = add(api, u, gpg.export(alice)).json()
    assert api(u).delete(f"/user/gpg_keys/{key['id']}").status_code == 204
    assert key_rows(db) == 0
    assert db.scalar(select(func.count()).select_from(GPGKeySubkey)) == 0


def test_revoking_an_own_key_is_accepted_and_removes_it(api, make, gpg, alice, db):
    u = make.user()
    key = add(api, u, gpg.export(alice)).json()
    r = api(u).post(f"/user/gpg_keys/{key['id']}/revoke")
    assert (r.status_code, r.content) == (202, b"")
    assert key_rows(db) == 0


# ----------------------------------------------------------------------------- a user's keys


def test_anyone_lists_a_users_keys(api, make, gpg, alice):
    u = make.user()
    key = add(api, u, gpg.export(alice)).json()
    assert api().get(f"/users/{u.id}/gpg_keys").json() == [key]
    assert api().get(f"/users/{u.id}/gpg_keys/{key['id']}").json() == key


def test_keys_of_an_unknown_user(api):
    r = api().get("/users/999999/gpg_keys")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_a_key_of_another_user_is_not_found(api, make, gpg, alice):
    key = add(api, make.user(), gpg.export(alice)).json()
    r = api().get(f"/users/{make.user().id}/gpg_keys/{key['id']}")
    assert (r.status_code, r.json()) == (404, GPG_KEY_NOT_FOUND)


def test_an_administrator_adds_deletes_and_revokes_keys_for_a_user(api, make, gpg, alice, bob, db):
    u = make.user()
    one = api("root").post(f"/users/{u.id}/gpg_keys", json={"key": gpg.export(alice)})
    two = api("root").post(f"/users/{u.id}/gpg_keys", json={"key": gpg.export(bob)})
    assert (one.status_code, two.status_code) == (201, 201)
    assert api(u).get("/user/gpg_keys").json() == [one.json(), two.json()]
    assert api("root").delete(f"/users/{u.id}/gpg_keys/{one.json()['id']}").status_code == 204
    assert api("root").post(f"/users/{u.id}/gpg_keys/{two.json()['id']}/revoke").status_code == 202
    assert key_rows(db) == 0


def test_only_administrators_manage_other_users_keys(api, make, gpg, alice):
    u = make.user()
    key = add(api, u, gpg.export(alice)).json()
    other = make.user()
    assert api(other).post(f"/users/{u.id}/gpg_keys", json={"key": gpg.export(alice)}).json() == FORBIDDEN
    assert api(other).delete(f"/users/{u.id}/gpg_keys/{key['id']}").status_code == 403
    assert api(other).post(f"/users/{u.id}/gpg_keys/{key['id']}/revoke").status_code == 403


def test_adding_a_key_for_an_unknown_user(api, gpg, alice):
    r = api("root").post("/users/999999/gpg_keys", json={"key": gpg.export(alice)})
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


# ----------------------------------------------------------------------------- cost


def _insert_keys(db, user_id: int, n: int) -> None:
    for i in range(n):
        db.add(
            GPGKey(
                user_id=user_id,
                key=f"key {user_id} {i}",
                primary_keyid=f"{user_id:08X}{i:08X}",
                fingerprint=f"{user_id:020X}{i:020X}",
            )
        )
    db.commit()


@pytest.mark.parametrize("route", ["/user/gpg_keys", "/users/{id}/gpg_keys"])
def test_key_lists_cost_the_same_for_2_and_12_keys(api, make, db, runtime, route):
    few, many = make.user(), make.user()
    _insert_keys(db, few.id, 2)
    _insert_keys(db, many.id, 12)
    costs = [
        count(
            runtime,
            lambda u=u: api(u).get(route.format(id=u.id), params={"per_page": 50}),
            leaving_out=("application_settings",),  # read by the rate limits' settings check, not the route
        )
        for u in (few, many)
    ]
    assert costs[0] == costs[1]
    assert costs[0] <= 4
    sizes = [len(api(u).get(route.format(id=u.id), params={"per_page": 50}).json()) for u in (few, many)]
    assert sizes == [2, 12]


# ----------------------------------------------------------------------------- one key a block


def test_a_block_of_several_primary_keys_is_refused(api, make, gpg, alice, bob, db):
    block = gpg.run("--armor", "--export", alice, bob).decode()
    r = add(api, make.user(), block)
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["must contain only one public key"]}})
    assert key_rows(db) == 0
