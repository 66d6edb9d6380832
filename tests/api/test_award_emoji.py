"""Emoji reactions on issues, epics and their notes: read with what they are on, given by
anyone signed in who may comment, once per user and name, taken back only by whoever gave
them (or an administrator); thumbs on an issue or epic are its upvotes and downvotes."""

from __future__ import annotations

from sqlalchemy import select

from kiln.models import AwardEmoji, Epic, Event, Issue, Todo
from kiln.models.todos import PENDING
from tests.statements import count


def awards_url(project, issue, award_id=None, *, note=None):
    url = f"/projects/{project.id}/issues/{issue.iid}"
    url += f"/notes/{note.id}/award_emoji" if note is not None else "/award_emoji"
    return url if award_id is None else f"{url}/{award_id}"


def public_issue(make, **fields):
    owner = make.user()
    project = make.project(owner=owner, visibility="public")
    return owner, project, make.issue(project, owner, **fields)


def votes(db, issue):
    return db.execute(select(Issue.upvotes, Issue.downvotes).where(Issue.id == issue.id)).one()


def award_count(db):
    return len(db.scalars(select(AwardEmoji.id)).all())


def test_reacting_answers_gitlabs_view(api, make):
    owner, p, i = public_issue(make)
    r = api(owner).post(awards_url(p, i), json={"name": "tada"})
    assert r.status_code == 201
    view = r.json()
    assert {k: view[k] for k in ("name", "awardable_id", "awardable_type")} == {
        "name": "tada",
        "awardable_id": i.id,
        "awardable_type": "Issue",
    }
    assert view["user"]["username"] == owner.username
    assert view["created_at"].endswith("Z")
    assert view["updated_at"].endswith("Z")


def test_reactions_are_listed_oldest_first_and_read_one_by_one(api, make):
    owner, p, i = public_issue(make)
    other = make.user()
    first = api(owner).post(awards_url(p, i), json={"name": "heart"}).json()
    second = api(other).post(awards_url(p, i), json={"name": "rocket"}).json()
    assert [a["id"] for a in api().get(awards_url(p, i)).json()] == [first["id"], second["id"]]
    assert api().get(awards_url(p, i, second["id"])).json()["name"] == "rocket"


def test_thumbs_move_the_issues_votes(api, make, db):
    owner, p, i = public_issue(make)
    other = make.user()
    up = api(owner).post(awards_url(p, i), json={"name": "thumbsup"}).json()
    api(other).post(awards_url(p, i), json={"name": "thumbsup"})
    api(other).post(awards_url(p, i), json={"name": "thumbsdown"})
    assert tuple(votes(db, i)) == (2, 1)
    api(owner).delete(awards_url(p, i, up["id"]))
    assert tuple(votes(db, i)) == (1, 1)


def test_plus_one_is_thumbsup(api, make, db):
    owner, p, i = public_issue(make)
    assert api(owner).post(awards_url(p, i), json={"name": "+1"}).json()["name"] == "thumbsup"
    assert api(owner).post(awards_url(p, i), json={"name": "-1"}).json()["name"] == "thumbsdown"
    assert tuple(votes(db, i)) == (1, 1)


def test_an_unknown_emoji_is_refused_as_gitlab_refuses_it(api, make, db):
    owner, p, i = public_issue(make)
    r = api(owner).post(awards_url(p, i), json={"name": "no_such_emoji"})
    assert (r.status_code, r.json()) == (
        404,
        {"message": "404 Award Emoji Name is not a valid emoji name Not Found"},
    )
    assert award_count(db) == 0


def test_the_same_reaction_twice_is_refused(api, make, db):
    owner, p, i = public_issue(make)
    api(owner).post(awards_url(p, i), json={"name": "thumbsup"})
    r = api(owner).post(awards_url(p, i), json={"name": "thumbsup"})
    assert (r.status_code, r.json()) == (
        404,
        {"message": "404 Award Emoji Name has already been taken Not Found"},
    )
    assert award_count(db) == 1
    assert tuple(votes(db, i)) == (1, 0)


def test_name_is_required(api, make, db):
    owner, p, i = public_issue(make)
    r = api(owner).post(awards_url(p, i), json={})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing"})
    assert award_count(db) == 0


def test_anonymous_callers_read_but_cannot_react(api, make, db):
    owner, p, i = public_issue(make)
    api(owner).post(awards_url(p, i), json={"name": "heart"})
    assert [a["name"] for a in api().get(awards_url(p, i)).json()] == ["heart"]
    assert api().post(awards_url(p, i), json={"name": "tada"}).status_code == 401
    assert award_count(db) == 1


def test_reactions_of_a_private_project_are_hidden(api, make, db):
    owner = make.user()
    p = make.project(owner=owner)
    i = make.issue(p, owner)
    stranger = make.user()
    for r in (
        api(stranger).get(awards_url(p, i)),
        api(stranger).post(awards_url(p, i), json={"name": "tada"}),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert award_count(db) == 0


def test_a_confidential_issue_takes_no_reaction_from_those_who_cannot_see_it(api, make, db):
    _owner, p, i = public_issue(make, confidential=True)
    r = api(make.user()).post(awards_url(p, i), json={"name": "tada"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    assert award_count(db) == 0


def test_an_archived_projects_issue_takes_no_reaction(api, make, db):
    owner = make.user()
    p = make.project(owner=owner, visibility="public", archived=True)
    i = make.issue(p, owner)
    r = api(owner).post(awards_url(p, i), json={"name": "tada"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Award Emoji Not Found"})
    assert award_count(db) == 0


def test_only_the_awarder_or_an_admin_takes_a_reaction_back(api, make, db):
    owner, p, i = public_issue(make)
    awarder = make.user()
    award = api(awarder).post(awards_url(p, i), json={"name": "thumbsup"}).json()
    r = api(owner).delete(awards_url(p, i, award["id"]))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})
    assert award_count(db) == 1
    assert api("root").delete(awards_url(p, i, award["id"])).status_code == 204
    assert award_count(db) == 0
    assert tuple(votes(db, i)) == (0, 0)


def test_an_unknown_reaction_is_not_found(api, make, db):
    owner, p, i = public_issue(make)
    other = make.issue(p, owner)
    award = api(owner).post(awards_url(p, other), json={"name": "tada"}).json()
    for r in (
        api(owner).get(awards_url(p, i, award["id"])),
        api(owner).delete(awards_url(p, i, award["id"])),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Award Emoji Not Found"})
    assert award_count(db) == 1


def test_reacting_marks_the_awarders_todos_done(api, make, db):
    owner, p, i = public_issue(make)
    mentioned = make.user()
    api(owner).post(f"/projects/{p.id}/issues/{i.iid}/notes", json={"body": f"@{mentioned.username}"})
    assert db.scalars(select(Todo.state).where(Todo.user_id == mentioned.id)).all() == [PENDING]
    assert api(mentioned).post(awards_url(p, i), json={"name": "eyes"}).status_code == 201
    db.expire_all()
    states = db.scalars(select(Todo.state).where(Todo.user_id == mentioned.id)).all()
    assert states
    assert PENDING not in states


def test_reacting_records_an_emoji_event(api, make, db):
    owner, p, i = public_issue(make)
    award = api(owner).post(awards_url(p, i), json={"name": "tada"}).json()
    event = db.scalars(
        select(Event).where(Event.target_type == "AwardEmoji", Event.target_id == award["id"])
    ).one()
    assert (event.action, event.data["hook"], event.data["hook_action"], event.data["name"]) == (
        "awarded",
        "emoji",
        "award",
        "tada",
    )


# ----------------------------------------------------------------------------- notes


def test_a_note_takes_reactions_that_are_no_votes(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner)
    r = api(owner).post(awards_url(p, i, note=note), json={"name": "thumbsup"})
    assert (r.status_code, r.json()["awardable_type"], r.json()["awardable_id"]) == (201, "Note", note.id)
    assert [a["name"] for a in api().get(awards_url(p, i, note=note)).json()] == ["thumbsup"]
    assert api().get(awards_url(p, i)).json() == []
    assert tuple(votes(db, i)) == (0, 0)


def test_a_system_note_takes_no_reaction(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, system=True)
    r = api(owner).post(awards_url(p, i, note=note), json={"name": "tada"})
    assert (r.status_code, r.json()) == (
        404,
        {"message": "404 Award Emoji Awardable cannot be awarded emoji Not Found"},
    )
    assert award_count(db) == 0


def test_an_internal_note_and_its_reactions_are_hidden_below_reporter(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, internal=True)
    assert api(owner).post(awards_url(p, i, note=note), json={"name": "tada"}).status_code == 201
    assert [a["name"] for a in api(owner).get(awards_url(p, i, note=note)).json()] == ["tada"]
    stranger = make.user()
    r = api(stranger).get(awards_url(p, i, note=note))
    assert (r.status_code, r.json()) == (404, {"message": "404 Note Not Found"})
    r = api(stranger).post(awards_url(p, i, note=note), json={"name": "eyes"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Note Not Found"})
    assert award_count(db) == 1


def test_deleting_a_note_takes_its_reactions(api, make, db):
    owner, p, i = public_issue(make)
    note = api(owner).post(f"/projects/{p.id}/issues/{i.iid}/notes", json={"body": "x"}).json()
    api(owner).post(f"/projects/{p.id}/issues/{i.iid}/notes/{note['id']}/award_emoji", json={"name": "tada"})
    assert award_count(db) == 1
    assert api(owner).delete(f"/projects/{p.id}/issues/{i.iid}/notes/{note['id']}").status_code == 204
    assert award_count(db) == 0


# ----------------------------------------------------------------------------- epics


def test_epics_take_reactions_by_iid(api, make, db):
    owner = make.user()
    g = make.group(owners=[owner], visibility="public")
    make.epic(make.group(owners=[owner]), owner)
    e = make.epic(g, owner)
    url = f"/groups/{g.id}/epics/{e.iid}/award_emoji"
    r = api(owner).post(url, json={"name": "thumbsdown"})
    assert (r.status_code, r.json()["awardable_type"], r.json()["awardable_id"]) == (201, "Epic", e.id)
    assert db.execute(select(Epic.upvotes, Epic.downvotes).where(Epic.id == e.id)).one() == (0, 1)
    assert [a["name"] for a in api().get(url).json()] == ["thumbsdown"]
    note = make.note(e, owner)
    note_url = f"/groups/{g.id}/epics/{e.iid}/notes/{note.id}/award_emoji"
    assert api(owner).post(note_url, json={"name": "heart"}).json()["awardable_type"] == "Note"
    assert api(owner).delete(f"{url}/{r.json()['id']}").status_code == 204
    assert db.execute(select(Epic.downvotes).where(Epic.id == e.id)).scalar_one() == 0


# ----------------------------------------------------------------------------- statements


def test_list_is_constant_in_reactions_and_users(api, make, runtime):
    owner, p, i = public_issue(make)
    api(owner).post(awards_url(p, i), json={"name": "tada"})
    few = count(runtime, lambda: api(owner).get(awards_url(p, i)))
    for _ in range(6):
        api(make.user()).post(awards_url(p, i), json={"name": "rocket"})
    many = count(runtime, lambda: api(owner).get(awards_url(p, i)))
    assert len(api(owner).get(awards_url(p, i)).json()) == 7
    assert few == many
