"""SSH keys: GitLab's Users API "SSH keys" (/user/keys, /users/:id/keys) and Keys API (/keys),
with real keys made by ssh-keygen, one rule per test."""

from __future__ import annotations

import base64
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import func, select

from kiln.models import SSHKey
from kiln.services import instance_settings
from tests.bodies import FORBIDDEN, UNAUTHORIZED
from tests.statements import count

ALL_TYPES = "RSA, DSA, ECDSA, ED25519, ECDSA_SK, or ED25519_SK"
# (ssh-keygen -t, -b or None): every type the tests use, made once per session.
KINDS = {
    "ed25519": ("ed25519", None),
    "ed25519-b": ("ed25519", None),
    "rsa2048": ("rsa", "2048"),
    "rsa1024": ("rsa", "1024"),
    "ecdsa384": ("ecdsa", "384"),
    "dsa": ("dsa", None),
}


class Made:
    def __init__(self, path: Path) -> None:
        self.path = path  # the private key; its public one is beside it (.pub)
        self.text = path.with_suffix(".pub").read_text().strip()
        self.md5 = _fingerprint(path, "md5").removeprefix("MD5:")
        self.sha256 = _fingerprint(path, "sha256")


def _fingerprint(path: Path, kind: str) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", kind, "-f", str(path.with_suffix(".pub"))],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()[1]


@pytest.fixture(scope="session")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Made]:
    root = tmp_path_factory.mktemp("ssh-keys")
    keys = {}
    for name, (kind, bits) in KINDS.items():
        path = root / name
        args = ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", f"{name}@laptop.example", "-f", str(path)]
        if bits:
            args += ["-b", bits]
        subprocess.run(args, check=True, capture_output=True)
        keys[name] = Made(path)
    return keys


def published(text: str, name: str) -> str:
    return " ".join(text.split()[:2]) + f" {name} (kiln.test)"


def add(api, caller, text: str, title: str = "laptop", **fields):
    return api(caller).post("/user/keys", json={"title": title, "key": text, **fields})


def key_rows(db) -> int:
    return db.scalar(select(func.count()).select_from(SSHKey))


# ----------------------------------------------------------------------------- adding


def test_adding_a_key_answers_it_as_gitlab_does(api, make, made):
    u = make.user(name="Ann Smith")
    r = add(api, u, made["ed25519"].text, expires_at="2999-01-01T00:00:00Z")
    body = r.json()
    assert r.status_code == 201
    assert list(body) == ["id", "title", "created_at", "expires_at", "key", "usage_type"]
    assert body["title"] == "laptop"
    assert body["expires_at"] == "2999-01-01T00:00:00.000Z"
    assert body["usage_type"] == "auth_and_signing"
    assert body["created_at"].endswith("Z")


def test_the_key_is_published_with_the_owners_name_instead_of_its_comment(api, make, made):
    u = make.user(name="Ann Smith")
    body = add(api, u, made["ed25519"].text).json()
    assert body["key"] == published(made["ed25519"].text, "Ann Smith")
    assert "laptop.example" not in body["key"]


def test_the_comment_is_kept_with_the_key(api, make, made, db):
    u = make.user()
    add(api, u, made["ed25519"].text)
    assert db.scalar(select(SSHKey.key)) == made["ed25519"].text


def test_fingerprints_are_those_ssh_keygen_prints(api, make, made, db):
    u = make.user()
    add(api, u, made["rsa2048"].text)
    row = db.scalars(select(SSHKey)).one()
    assert (row.fingerprint, row.fingerprint_sha256) == (made["rsa2048"].md5, made["rsa2048"].sha256)


def test_a_key_broken_over_lines_is_joined_again(api, make, made, db):
    u = make.user()
    kind, blob, comment = made["rsa2048"].text.split(" ", 2)
    broken = f"{kind} {blob[:100]}\n{blob[100:]} {comment}"
    assert add(api, u, broken).status_code == 201
    assert db.scalar(select(SSHKey.key)) == made["rsa2048"].text


def test_usage_type_is_kept(api, make, made):
    u = make.user()
    assert add(api, u, made["ed25519"].text, usage_type="signing").json()["usage_type"] == "signing"


def test_an_unknown_usage_type_is_refused(api, make, made, db):
    r = add(api, make.user(), made["ed25519"].text, usage_type="everything")
    assert (r.status_code, r.json()) == (400, {"error": "usage_type does not have a valid value"})
    assert key_rows(db) == 0


def test_title_and_key_are_required(api, make):
    r = api(make.user()).post("/user/keys", json={})
    assert (r.status_code, r.json()) == (400, {"error": "key is missing, title is missing"})


def test_a_blank_title_is_refused(api, make, made, db):
    r = add(api, make.user(), made["ed25519"].text, title=" ")
    assert (r.status_code, r.json()) == (400, {"message": {"title": ["can't be blank"]}})
    assert key_rows(db) == 0


def test_text_that_is_no_key_is_refused_with_gitlabs_messages(api, make, db):
    r = add(api, make.user(), "not a key at all")
    assert r.status_code == 400
    assert r.json() == {
        "message": {
            "key": [f"type is forbidden. Must be {ALL_TYPES}", "is invalid"],
            "fingerprint_sha256": ["cannot be generated"],
        }
    }
    assert key_rows(db) == 0


def test_a_key_whose_base64_is_damaged_is_refused(api, make, made, db):
    kind, blob, _ = made["ed25519"].text.split(" ", 2)
    r = add(api, make.user(), f"{kind} {blob[:-8]}")
    assert r.json() == {
        "message": {
            "key": [f"type is forbidden. Must be {ALL_TYPES}"],
            "fingerprint_sha256": ["cannot be generated"],
        }
    }
    assert (r.status_code, key_rows(db)) == (400, 0)


def test_a_key_whose_inner_type_differs_from_its_name_is_refused(api, make, made, db):
    _, blob, _ = made["ed25519"].text.split(" ", 2)
    r = add(api, make.user(), f"ssh-rsa {blob}")
    assert r.status_code == 400
    assert r.json()["message"]["fingerprint_sha256"] == ["cannot be generated"]
    assert key_rows(db) == 0


def test_a_key_someone_already_has_is_refused(api, make, made, db):
    add(api, make.user(), made["ed25519"].text)
    r = add(api, make.user(), made["ed25519"].text)
    assert (r.status_code, r.json()) == (400, {"message": {"fingerprint_sha256": ["has already been taken"]}})
    assert key_rows(db) == 1


def test_the_same_key_with_another_comment_is_still_taken(api, make, made, db):
    add(api, make.user(), made["ed25519"].text)
    other = " ".join(made["ed25519"].text.split()[:2]) + " another@comment"
    assert add(api, make.user(), other).json() == {
        "message": {"fingerprint_sha256": ["has already been taken"]}
    }
    assert key_rows(db) == 1


def test_a_key_that_expired_already_is_refused(api, make, made, db):
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    r = add(api, make.user(), made["ed25519"].text, expires_at=past)
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["has expired"]}})
    assert key_rows(db) == 0


def test_an_rsa_key_below_the_instance_minimum_is_refused(api, make, made, db):
    instance_settings.update(db, {"rsa_key_restriction": 3072})
    r = add(api, make.user(), made["rsa2048"].text)
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["must be at least 3072 bits"]}})
    assert key_rows(db) == 0


def test_a_key_at_the_instance_minimum_is_accepted(api, make, made, db):
    instance_settings.update(db, {"rsa_key_restriction": 2048, "ecdsa_key_restriction": 384})
    assert add(api, make.user(), made["rsa2048"].text).status_code == 201
    assert add(api, make.user(), made["ecdsa384"].text).status_code == 201
    assert add(api, make.user(), made["rsa1024"].text).json() == {
        "message": {"key": ["must be at least 2048 bits"]}
    }
    assert key_rows(db) == 2


def test_a_forbidden_type_is_refused_naming_the_allowed_ones(api, make, made, db):
    instance_settings.update(db, {"ed25519_key_restriction": -1, "dsa_key_restriction": -1})
    r = add(api, make.user(), made["ed25519"].text)
    assert r.json() == {
        "message": {"key": ["type is forbidden. Must be RSA, ECDSA, ECDSA_SK, or ED25519_SK"]}
    }
    assert key_rows(db) == 0


def test_two_allowed_types_are_named_with_or(api, make, made, db):
    forbidden = {f"{t}_key_restriction": -1 for t in ("dsa", "ecdsa", "ecdsa_sk", "ed25519_sk")}
    instance_settings.update(db, {**forbidden, "rsa_key_restriction": 0, "ed25519_key_restriction": 0})
    r = add(api, make.user(), made["dsa"].text)
    assert r.json() == {"message": {"key": ["type is forbidden. Must be RSA or ED25519"]}}
    assert key_rows(db) == 0


def test_a_dsa_key_is_accepted_while_any_size_is_allowed(api, make, made, db):
    assert add(api, make.user(), made["dsa"].text).status_code == 201
    assert db.scalar(select(SSHKey.key)) == made["dsa"].text


def test_adding_needs_a_signed_in_user(api, made, db):
    r = api().post("/user/keys", json={"title": "t", "key": made["ed25519"].text})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)
    assert key_rows(db) == 0


# ----------------------------------------------------------------------------- own keys


def test_own_keys_are_listed_oldest_first(api, make, made):
    u = make.user()
    first = add(api, u, made["ed25519"].text, title="one").json()
    second = add(api, u, made["rsa2048"].text, title="two").json()
    add(api, make.user(), made["ecdsa384"].text)
    r = api(u).get("/user/keys")
    assert (r.status_code, r.json()) == (200, [first, second])
    assert r.headers["X-Total"] == "2"


def test_one_own_key(api, make, made):
    u = make.user()
    key = add(api, u, made["ed25519"].text).json()
    r = api(u).get(f"/user/keys/{key['id']}")
    assert (r.status_code, r.json()) == (200, key)


def test_someone_elses_key_is_not_found_under_user(api, make, made):
    key = add(api, make.user(), made["ed25519"].text).json()
    other = make.user()
    assert api(other).get(f"/user/keys/{key['id']}").json() == {"message": "404 Key Not Found"}
    r = api(other).delete(f"/user/keys/{key['id']}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Key Not Found"})


def test_deleting_an_own_key(api, make, made, db):
    u = make.user()
    key = add(api, u, made["ed25519"].text).json()
    assert api(u).delete(f"/user/keys/{key['id']}").status_code == 204
    assert key_rows(db) == 0
    assert api(u).get(f"/user/keys/{key['id']}").status_code == 404


def test_a_non_numeric_key_id_is_no_route(api, make):
    assert api(make.user()).get("/user/keys/abc").json() == {"error": "404 Not Found"}


# ----------------------------------------------------------------------------- a user's keys


def test_anyone_lists_a_users_keys_by_id_or_username(api, make, made):
    u = make.user(name="Bo")
    key = add(api, u, made["ed25519"].text).json()
    assert api().get(f"/users/{u.id}/keys").json() == [key]
    assert api(make.user()).get(f"/users/{u.username}/keys").json() == [key]


def test_keys_of_an_unknown_user(api):
    r = api().get("/users/nobody-here/keys")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_one_key_of_a_user(api, make, made):
    u = make.user()
    key = add(api, u, made["ed25519"].text).json()
    assert api().get(f"/users/{u.id}/keys/{key['id']}").json() == key
    other = make.user()
    r = api().get(f"/users/{other.id}/keys/{key['id']}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Key Not Found"})


def test_an_administrator_adds_a_key_for_a_user(api, make, made):
    u = make.user(name="Cy")
    r = api("root").post(f"/users/{u.id}/keys", json={"title": "ci", "key": made["ed25519"].text})
    assert r.status_code == 201
    assert r.json()["key"] == published(made["ed25519"].text, "Cy")
    assert api(u).get("/user/keys").json() == [r.json()]


def test_only_administrators_add_keys_for_users(api, make, made, db):
    u = make.user()
    r = api(u).post(f"/users/{u.id}/keys", json={"title": "ci", "key": made["ed25519"].text})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert key_rows(db) == 0


def test_adding_a_key_for_an_unknown_user(api, made):
    r = api("root").post("/users/999999/keys", json={"title": "ci", "key": made["ed25519"].text})
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_an_administrator_deletes_a_users_key(api, make, made, db):
    u = make.user()
    key = add(api, u, made["ed25519"].text).json()
    assert api(make.user()).delete(f"/users/{u.id}/keys/{key['id']}").status_code == 403
    assert api("root").delete(f"/users/{u.id}/keys/{key['id']}").status_code == 204
    assert key_rows(db) == 0
    r = api("root").delete(f"/users/{u.id}/keys/{key['id']}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Key Not Found"})


# ----------------------------------------------------------------------------- /keys


def test_an_administrator_gets_a_key_with_its_user(api, make, made):
    u = make.user(name="Di")
    key = add(api, u, made["ed25519"].text).json()
    r = api("root").get(f"/keys/{key['id']}")
    body = r.json()
    assert r.status_code == 200
    assert {k: body[k] for k in key} == key
    assert (body["user"]["id"], body["user"]["username"], body["user"]["email"]) == (
        u.id,
        u.username,
        u.email,
    )


def test_only_administrators_get_keys_by_id(api, make, made):
    u = make.user()
    key = add(api, u, made["ed25519"].text).json()
    assert (api(u).get(f"/keys/{key['id']}").status_code, api().get(f"/keys/{key['id']}").status_code) == (
        403,
        401,
    )


def test_a_key_id_that_names_no_key(api):
    r = api("root").get("/keys/424242")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_a_key_is_found_by_its_md5_fingerprint(api, make, made):
    u = make.user()
    key = add(api, u, made["rsa2048"].text).json()
    r = api("root").get("/keys", params={"fingerprint": made["rsa2048"].md5})
    assert (r.status_code, r.json()["id"], r.json()["user"]["id"]) == (200, key["id"], u.id)


def test_a_key_is_found_by_its_sha256_fingerprint(api, make, made):
    u = make.user()
    key = add(api, u, made["rsa2048"].text).json()
    r = api("root").get(f"/keys?fingerprint={quote(made['rsa2048'].sha256, safe='')}")
    assert (r.status_code, r.json()["id"]) == (200, key["id"])


def test_a_fingerprint_that_names_no_key(api, made):
    r = api("root").get("/keys", params={"fingerprint": made["rsa2048"].sha256})
    assert (r.status_code, r.json()) == (404, {"message": "404 Key Not Found"})


def test_a_malformed_fingerprint_is_refused(api):
    for bad in ("12:34", "SHA256:" + base64.b64encode(b"short").decode(), "nonsense"):
        r = api("root").get("/keys", params={"fingerprint": bad})
        assert (r.status_code, r.json()) == (400, {"message": "Failed to return the key"})


def test_only_administrators_look_keys_up_by_fingerprint(api, make, made):
    r = api(make.user()).get("/keys", params={"fingerprint": made["rsa2048"].md5})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


# ----------------------------------------------------------------------------- cost


def _insert_keys(db, user_id: int, n: int) -> None:
    for i in range(n):
        db.add(
            SSHKey(
                user_id=user_id,
                title=f"k{i}",
                key=f"ssh-ed25519 AAAA{i:08d} c",
                fingerprint=f"md5-{user_id}-{i}",
                fingerprint_sha256=f"SHA256:{user_id}-{i}",
            )
        )
    db.commit()


@pytest.mark.parametrize("route", ["/user/keys", "/users/{id}/keys"])
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


def test_a_deleted_users_keys_go_with_them(api, make, made, db):
    u = make.user()
    add(api, u, made["ed25519"].text)
    assert api("root").delete(f"/users/{u.id}").status_code == 204
    assert key_rows(db) == 0
    assert add(api, make.user(), made["ed25519"].text).status_code == 201


def test_a_deleted_keys_id_is_never_handed_out_again(api, make, made):
    u = make.user()
    newest = add(api, u, made["ed25519"].text).json()
    assert api(u).delete(f"/user/keys/{newest['id']}").status_code == 204
    again = add(api, u, made["ed25519-b"].text)
    assert again.status_code == 201
    assert again.json()["id"] > newest["id"]
