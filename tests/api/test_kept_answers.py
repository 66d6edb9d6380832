"""Answers kept for the next identical request (kiln.api._answers): a file read again by the
same caller is answered with the same bytes and no statement while nothing it was made from
changed, and made again as soon as anything did: any write to the database, the ref moving,
the caller's credential due a look, other credentials, other settings."""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update

from kiln.api import _answers
from kiln.models import PersonalAccessToken
from kiln.queries import reads
from kiln.services import repositories
from tests.factories.repositories import write_commit
from tests.repositories import new_project
from tests.statements import recording

README = "/repository/files/README.md?ref=main"


def read(api: Any, runtime: Any, caller: Any, path: str) -> tuple[Any, int]:
    """The answer, and the statements it cost: none if it was kept, some if it was made again
    (the rows a request reads are otherwise reused too: kiln.queries.reads)."""
    reads.forget_reused()
    with recording(runtime.engine) as statements:
        r = api(caller).get(path)
    return r, len(statements)


def kept_file(api: Any, make: Any, runtime: Any) -> tuple[Any, str]:
    """An owner who has read their project's README twice: the second answer is kept."""
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}{README}"
    for _ in range(2):
        assert api(owner).get(path).status_code == 200
    return owner, path


def test_the_same_read_again_is_the_same_answer_without_a_statement(api, make, runtime):
    owner, path = kept_file(api, make, runtime)
    first, _ = read(api, runtime, owner, path)
    again, statements = read(api, runtime, owner, path)
    assert statements == 0
    assert (again.status_code, again.content) == (200, first.content)
    assert {k: v for k, v in again.headers.items() if k.startswith("x-service-")} == {
        k: v for k, v in first.headers.items() if k.startswith("x-service-")
    }


def test_any_write_makes_the_next_read_answer_afresh(api, make, runtime):
    owner, path = kept_file(api, make, runtime)
    make.user()  # anyone, anything
    _, statements = read(api, runtime, owner, path)
    assert statements > 0


def test_a_revoked_token_is_refused_at_once(api, make, runtime, db):
    owner, path = kept_file(api, make, runtime)
    db.execute(
        update(PersonalAccessToken).where(PersonalAccessToken.user_id == owner.id).values(revoked=True)
    )
    r, _ = read(api, runtime, owner, path)
    assert r.status_code == 401


def test_a_branch_moved_without_a_word_to_the_database_is_seen_at_once(api, make, runtime, settings):
    owner, path = kept_file(api, make, runtime)
    project_id = int(path.split("/")[2])
    write_commit(repositories.store(settings).open(project_id), {"README.md": b"moved on\n"})
    r, _ = read(api, runtime, owner, path)
    assert base64.b64decode(r.json()["content"]) == b"moved on\n"


def test_a_token_whose_use_is_due_to_be_recorded_is_looked_at_again(api, make, runtime, db, monkeypatch):
    owner, path = kept_file(api, make, runtime)
    used = datetime.now(UTC) - timedelta(minutes=9, seconds=59)
    db.execute(
        update(PersonalAccessToken).where(PersonalAccessToken.user_id == owner.id).values(last_used_at=used)
    )
    api(owner).get(path)  # kept again, until the token's use is ten minutes old
    assert read(api, runtime, owner, path)[1] == 0
    later = datetime.now(UTC).timestamp() + 2
    monkeypatch.setattr(_answers.time, "time", lambda: later)
    _, statements = read(api, runtime, owner, path)
    assert statements > 0


def test_another_caller_gets_an_answer_of_their_own(api, make, runtime):
    _owner, path = kept_file(api, make, runtime)
    stranger = make.user()
    r, _ = read(api, runtime, stranger, path)
    assert r.status_code == 404
    anonymous = api().get(path)
    assert anonymous.status_code == 404


def test_other_settings_answer_afresh(api, make, runtime, configure):
    owner, path = kept_file(api, make, runtime)
    configure(external_url="http://elsewhere.test")
    _, statements = read(api, runtime, owner, path)
    assert statements > 0


def test_only_a_whole_successful_get_is_kept(api, make, runtime):
    owner = make.user()
    project = new_project(api, make, owner)
    missing = f"/projects/{project['id']}/repository/files/NOPE.md?ref=main"
    for _ in range(2):
        assert api(owner).get(missing).status_code == 404
    assert read(api, runtime, owner, missing)[1] > 0
    path = f"/projects/{project['id']}{README}"
    for _ in range(2):
        assert api(owner).head(path).status_code == 200
    reads.forget_reused()
    with recording(runtime.engine) as statements:
        assert api(owner).head(path).status_code == 200
    assert statements


def test_a_kept_answer_holds_no_secret(api, make, runtime):
    _answers.forget()
    owner, path = kept_file(api, make, runtime)
    in_query = f"{path}&private_token={owner.token}"
    for _ in range(3):
        assert api().get(in_query).status_code == 200
    keys = [*_answers._answers._kept, *_answers._seen, *_answers._paths]
    assert len(_answers._answers) == 2
    assert all(owner.token.encode() not in repr(key).encode() for key in keys)


def test_an_answer_is_kept_the_second_time_it_is_made(api, make, runtime):
    """A request made once (a script reading each file once) costs no copy of its answer."""
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}{README}"
    api(owner).get(path)  # made once (new_project's read recorded the token's first use)
    assert read(api, runtime, owner, path)[1] > 0  # made again, and kept
    assert read(api, runtime, owner, path)[1] == 0


def test_an_answer_lasts_no_later_than_the_day_its_request_began_in(api, make, runtime, monkeypatch):
    """Memberships expire by date: a request that began before midnight read for that day,
    however late it ends."""
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}{README}"
    api(owner).get(path)  # made once
    passed, ahead = time.time() - 1, time.time() + 3600
    days = iter([passed])  # the request begins the moment before midnight; it ends after it
    monkeypatch.setattr(_answers, "_next_midnight", lambda: next(days, ahead))
    api(owner).get(path)  # made again: kept until the midnight it began before
    assert read(api, runtime, owner, path)[1] > 0
