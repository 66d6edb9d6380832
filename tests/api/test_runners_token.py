"""A project's runner registration token (spec part 3: `runners_token`, a secret string in the
full view): kiln shows it to those who see the project's settings and finds the project by
it, while the database holds only a nonce and the token's digest; the token itself needs the
server secret (KILN_SECRET_KEY_BASE, or the data dir's `secret_key_base`)."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from kiln import cli
from kiln.auth import server_secret
from kiln.auth.tokens import PREFIX_RUNNERS, digest, runners_token
from kiln.db import transaction
from kiln.models import Project
from kiln.models.namespaces import DEVELOPER, MAINTAINER
from kiln.services import instance_settings
from kiln.services.project_creation import digest_runners_tokens, project_by_runners_token


def created(api: Any, owner: Any, **fields: Any) -> dict[str, Any]:
    r = api(owner).post("/projects", json={"name": "built", **fields})
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


def stored(db: Any, project_id: int) -> dict[str, Any]:
    row = db.execute(select(Project.__table__).where(Project.id == project_id)).mappings().one()
    return dict(row)


def test_the_token_a_new_project_shows_finds_that_project(api, make, db, settings):
    project = created(api, make.user())
    token = project["runners_token"]
    assert token.startswith(PREFIX_RUNNERS)
    assert len(token) == len(PREFIX_RUNNERS) + 20
    assert project_by_runners_token(db, token).id == project["id"]


def test_the_database_holds_the_tokens_digest_and_never_the_token(api, make, db):
    project = created(api, make.user())
    token = project["runners_token"]
    row = stored(db, project["id"])
    assert row["runners_token_digest"] == digest(token)
    assert not [name for name, value in row.items() if isinstance(value, str) and token[-20:] in value]


def test_the_token_is_derived_from_the_nonce_under_the_server_secret_alone(api, make, db, settings):
    project = created(api, make.user())
    nonce = stored(db, project["id"])["runners_token_nonce"]
    assert runners_token(server_secret.key(settings), nonce) == project["runners_token"]
    assert runners_token(b"s" * 128, nonce) != project["runners_token"]


def test_a_fork_gets_a_token_of_its_own(api, make, db, settings):
    owner = make.user()
    parent = created(api, owner, visibility="public")
    forker = make.user()
    fork = api(forker).post(f"/projects/{parent['id']}/fork").json()
    assert fork["runners_token"] != parent["runners_token"]
    assert project_by_runners_token(db, fork["runners_token"]).id == fork["id"]
    assert project_by_runners_token(db, parent["runners_token"]).id == parent["id"]


@pytest.mark.parametrize("token", ["", PREFIX_RUNNERS + "x" * 20, "x" * 10_000, "\x00"])
def test_a_token_kiln_never_showed_finds_no_project(api, make, db, settings, token):
    created(api, make.user())
    assert project_by_runners_token(db, token) is None


def test_a_digest_missing_at_start_is_made_then_and_finds_the_token_shown(api, make, db, settings):
    project = created(api, make.user())
    with transaction(db):
        db.execute(update(Project).where(Project.id == project["id"]).values(runners_token_digest=None))
    assert project_by_runners_token(db, project["runners_token"]) is None
    assert digest_runners_tokens(db, settings) == 1
    assert project_by_runners_token(db, project["runners_token"]).id == project["id"]
    assert stored(db, project["id"])["runners_token_digest"] == digest(project["runners_token"])
    assert digest_runners_tokens(db, settings) == 0


def test_a_developer_is_not_shown_the_token(api, make):
    owner, developer = make.user(), make.user()
    project = created(api, owner)
    added = api(owner).post(
        f"/projects/{project['id']}/members", json={"user_id": developer.id, "access_level": DEVELOPER}
    )
    assert added.status_code == 201
    seen = api(developer).get(f"/projects/{project['id']}")
    assert (seen.status_code, seen.json()["id"]) == (200, project["id"])
    assert "runners_token" not in seen.json()


def test_reading_a_project_shows_the_token_it_was_created_with(api, make):
    owner = make.user()
    project = created(api, owner)
    assert api(owner).get(f"/projects/{project['id']}").json()["runners_token"] == project["runners_token"]


ABSENT = "absent"


def tokens_shown(client: Any, project_id: int, group_id: int) -> list[Any]:
    """The project's runners_token in every view a caller reads it in: alone, in project
    lists (kept records and read whole), in its group's lists and in its group's detail."""
    lists = [
        client.get("/projects", params={"per_page": 100}).json(),
        client.get("/projects", params={"per_page": 100, "statistics": "true"}).json(),
        client.get(f"/groups/{group_id}/projects").json(),
        client.get(f"/groups/{group_id}").json()["projects"],
    ]
    views = [client.get(f"/projects/{project_id}").json()]
    views += [view for listed in lists for view in listed if view["id"] == project_id]
    assert len(views) == 1 + len(lists)
    return [view.get("runners_token", ABSENT) for view in views]


def test_only_who_may_administer_a_project_is_shown_its_token_whoever_read_it_first(api, make, db, settings):
    owner, maintainer, developer = make.user(), make.user(), make.user()
    group = make.group(owners=[owner], visibility="public")
    project = make.project(
        namespace=group, visibility="public", members={maintainer: MAINTAINER, developer: DEVELOPER}
    )
    callers = [("owner", api(owner)), ("developer", api(developer)), ("anonymous", api())]
    callers += [("maintainer", api(maintainer)), ("developer again", api(developer))]

    shown = {name: tokens_shown(client, project.id, group.id) for name, client in callers}

    token = shown["owner"][0]
    assert project_by_runners_token(db, token).id == project.id
    assert shown == {
        "owner": [token] * 5,
        "developer": [ABSENT] * 5,
        "anonymous": [ABSENT] * 5,
        "maintainer": [token] * 5,
        "developer again": [ABSENT] * 5,
    }


def test_every_write_answering_the_full_view_shows_the_token(api, make, db):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    owner = make.user()
    project = created(api, owner)
    client, path = api(owner), f"/projects/{project['id']}"
    views = {
        "update": client.put(path, json={"description": "changed"}).json(),
        "star": client.post(f"{path}/star").json(),
        "unstar": client.post(f"{path}/unstar").json(),
        "archive": client.post(f"{path}/archive").json(),
        "unarchive": client.post(f"{path}/unarchive").json(),
    }
    assert client.delete(path).status_code == 202
    views["restore"] = client.post(f"{path}/restore").json()
    shown = {name: view.get("runners_token") for name, view in views.items()}
    assert shown == dict.fromkeys(views, project["runners_token"])


# ---------------------------------------------------------------------------- the server secret


def test_the_server_secret_is_made_once_in_the_data_dir_readable_by_kiln_alone(settings, monkeypatch):
    monkeypatch.delenv(server_secret.ENV, raising=False)
    first = server_secret.key(settings)
    path = settings.data_dir / server_secret.FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip().encode() == first
    assert server_secret.key(settings) == first


def test_processes_making_the_server_secret_at_once_all_take_the_same(tmp_path):
    path = tmp_path / server_secret.FILE_NAME
    with ThreadPoolExecutor(8) as pool:
        made = set(pool.map(lambda _: server_secret._create(path), range(8)))
    assert made == {path.read_text()}
    assert [p.name for p in tmp_path.iterdir()] == [server_secret.FILE_NAME]


def test_the_environment_sets_the_server_secret(settings, monkeypatch):
    monkeypatch.setenv(server_secret.ENV, "s" * 40)
    assert server_secret.key(settings) == b"s" * 40
    assert not (settings.data_dir / server_secret.FILE_NAME).exists()


def test_a_short_server_secret_is_refused(settings, monkeypatch):
    monkeypatch.setenv(server_secret.ENV, "short")
    with pytest.raises(server_secret.ServerSecretError):
        server_secret.key(settings)


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_kiln_refuses_to_start_with_a_short_server_secret(command, tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_DATA_DIR", str(tmp_path))
    monkeypatch.setenv(server_secret.ENV, "short")
    result = CliRunner().invoke(cli.app, [command])
    assert result.exit_code == 1
    assert f"${server_secret.ENV} is shorter than {server_secret.MIN_LENGTH} characters" in result.stderr
    assert list(tmp_path.iterdir()) == []
