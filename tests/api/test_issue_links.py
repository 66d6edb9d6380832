"""Issue links: an issue relates to, blocks or is blocked by another, in its project or
another the caller sees. Guests and up link; a link shows only where its other end is
readable; each end's thread notes the link and its removal."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, select

from kiln.models import IssueLink, Note
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from tests.statements import statements


def links_url(project, issue, link_id: int | None = None) -> str:
    url = f"/projects/{project.id}/issues/{issue.iid}/links"
    return url if link_id is None else f"{url}/{link_id}"


def link(api, user, project, issue, target, link_type: str | None = None):
    body = {"target_project_id": target.project_id, "target_issue_iid": target.iid}
    if link_type is not None:
        body["link_type"] = link_type
    return api(user).post(links_url(project, issue), json=body)


def notes_of(db, issue) -> list[str]:
    return list(
        db.scalars(
            select(Note.body)
            .where(Note.noteable_type == "Issue", Note.noteable_id == issue.id, Note.system)
            .order_by(Note.id)
        )
    )


@pytest.fixture
def setup(make):
    dev = make.user()
    project = make.project(members={dev: DEVELOPER}, path="app")
    one = make.issue(project, dev, title="One")
    two = make.issue(project, dev, title="Two")
    return dev, project, one, two


def test_linking_answers_both_issues_and_notes_each_side(api, db, setup):
    dev, project, one, two = setup
    r = link(api, dev, project, one, two)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["link_type"] == "relates_to"
    assert (body["source_issue"]["id"], body["target_issue"]["id"]) == (one.id, two.id)
    assert body["source_issue"]["title"] == "One"
    assert notes_of(db, one) == [f"marked this issue as related to #{two.iid}"]
    assert notes_of(db, two) == [f"marked this issue as related to #{one.iid}"]


def test_links_are_listed_from_either_end_with_their_link(api, setup):
    dev, project, one, two = setup
    link(api, dev, project, one, two)
    [seen] = api(dev).get(links_url(project, two)).json()
    assert seen["id"] == one.id
    assert seen["link_type"] == "relates_to"
    assert isinstance(seen["issue_link_id"], int)
    assert seen["link_created_at"].endswith("Z")
    assert seen["link_updated_at"].endswith("Z")
    assert seen["references"]["relative"] == f"#{one.iid}"
    [forward] = api(dev).get(links_url(project, one)).json()
    assert forward["id"] == two.id


def test_blocks_and_is_blocked_by_are_one_link_seen_from_both_sides(api, db, make, setup):
    dev, project, one, two = setup
    r = link(api, dev, project, one, two, "is_blocked_by")
    assert r.status_code == 201
    # Stored the other way round: two blocks one.
    assert (r.json()["source_issue"]["id"], r.json()["target_issue"]["id"], r.json()["link_type"]) == (
        two.id,
        one.id,
        "blocks",
    )
    assert [i["link_type"] for i in api(dev).get(links_url(project, one)).json()] == ["is_blocked_by"]
    assert [i["link_type"] for i in api(dev).get(links_url(project, two)).json()] == ["blocks"]
    assert notes_of(db, two) == [f"marked this issue as blocking #{one.iid}"]
    assert notes_of(db, one) == [f"marked this issue as blocked by #{two.iid}"]
    three = make.issue(project, dev)
    r = link(api, dev, project, one, three, "blocks")
    assert (r.json()["source_issue"]["id"], r.json()["link_type"]) == (one.id, "blocks")


def test_a_pair_is_linked_once_whichever_way(api, db, setup):
    dev, project, one, two = setup
    link(api, dev, project, one, two)
    for source, target in ((one, two), (two, one)):
        r = link(api, dev, project, source, target, "blocks")
        assert (r.status_code, r.json()) == (409, {"message": "Issue(s) already assigned"})
    assert len(db.scalars(select(IssueLink)).all()) == 1


def test_an_issue_cannot_be_linked_to_itself(api, db, setup):
    dev, project, one, _ = setup
    r = link(api, dev, project, one, one)
    assert r.status_code == 400
    assert r.json() == {"message": f"#{one.iid} cannot be added: cannot be related to itself"}
    assert db.scalars(select(IssueLink)).all() == []


def test_bad_parameters_are_refused(api, db, setup):
    dev, project, one, two = setup
    r = api(dev).post(links_url(project, one), json={"target_issue_iid": two.iid})
    assert (r.status_code, r.json()) == (400, {"error": "target_project_id is missing"})
    r = link(api, dev, project, one, two, "duplicates")
    assert (r.status_code, r.json()) == (400, {"error": "link_type does not have a valid value"})
    assert db.scalars(select(IssueLink)).all() == []


def test_a_target_the_caller_cannot_see_is_not_found(api, db, make, setup):
    dev, project, one, _ = setup
    other = make.project()
    hidden = make.issue(other, make.user())
    r = link(api, dev, project, one, hidden)
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    r = api(dev).post(
        links_url(project, one), json={"target_project_id": project.id, "target_issue_iid": 999}
    )
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    assert db.scalars(select(IssueLink)).all() == []


def test_a_guest_links_but_a_non_member_of_a_public_project_cannot(api, make, db):
    owner, guest, outsider = make.user(), make.user(), make.user()
    public = make.project(visibility="public", members={owner: REPORTER, guest: GUEST})
    one, two = make.issue(public, owner), make.issue(public, owner)
    assert link(api, guest, public, one, two).status_code == 201
    three = make.issue(public, owner)
    assert link(api, outsider, public, one, three).status_code == 403
    assert api().get(links_url(public, one)).status_code == 200
    assert link(api, None, public, one, three).status_code == 401
    pairs = [(k.source_id, k.target_id) for k in db.scalars(select(IssueLink))]
    assert pairs == [(one.id, two.id)]
    assert notes_of(db, three) == []
    assert [i["id"] for i in api().get(links_url(public, one)).json()] == [two.id]


def test_cross_project_links_name_the_other_project_and_hide_from_those_who_cannot_see_it(api, make, db):
    dev, reader = make.user(), make.user()
    group = make.group(owners=[dev], path="grp")
    public = make.project(namespace=group, visibility="public", path="pub")
    private = make.project(namespace=group, path="priv")
    shown, secret = make.issue(public, dev), make.issue(private, dev)
    r = link(api, dev, public, shown, secret)
    assert r.status_code == 201, r.text
    assert notes_of(db, shown) == [f"marked this issue as related to grp/priv#{secret.iid}"]
    assert notes_of(db, secret) == [f"marked this issue as related to grp/pub#{shown.iid}"]
    assert len(api(dev).get(links_url(public, shown)).json()) == 1
    assert api(reader).get(links_url(public, shown)).json() == []
    link_id = api(dev).get(links_url(public, shown)).json()[0]["issue_link_id"]
    r = api(reader).get(links_url(public, shown, link_id))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_a_confidential_issue_is_linked_only_for_those_who_see_it(api, make, db):
    owner, guest = make.user(), make.user()
    project = make.project(members={owner: REPORTER, guest: GUEST})
    one = make.issue(project, owner)
    secret = make.issue(project, owner, confidential=True)
    assert link(api, owner, project, one, secret).status_code == 201
    assert api(guest).get(links_url(project, one)).json() == []
    assert [i["id"] for i in api(owner).get(links_url(project, one)).json()] == [secret.id]
    db.execute(delete(IssueLink))
    assert link(api, guest, project, one, secret).status_code == 404
    assert db.scalars(select(IssueLink)).all() == []


def test_one_link_and_its_removal(api, db, setup):
    dev, project, one, two = setup
    link(api, dev, project, one, two)
    listed = api(dev).get(links_url(project, one)).json()
    link_id = listed[0]["issue_link_id"]
    got = api(dev).get(links_url(project, two, link_id))
    assert got.status_code == 200
    assert (got.json()["source_issue"]["id"], got.json()["target_issue"]["id"]) == (one.id, two.id)
    r = api(dev).delete(links_url(project, two, link_id))
    assert r.status_code == 200
    assert r.json() == got.json()
    assert db.scalars(select(IssueLink)).all() == []
    assert notes_of(db, one)[-1] == f"removed the relation with #{two.iid}"
    assert notes_of(db, two)[-1] == f"removed the relation with #{one.iid}"
    assert api(dev).get(links_url(project, one, link_id)).status_code == 404


def test_a_link_of_another_issue_is_not_found_through_this_one(api, make, setup):
    dev, project, one, two = setup
    three = make.issue(project, dev)
    link(api, dev, project, one, two)
    link_id = api(dev).get(links_url(project, one)).json()[0]["issue_link_id"]
    for r in (
        api(dev).get(links_url(project, three, link_id)),
        api(dev).delete(links_url(project, three, link_id)),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_removing_takes_a_guest_on_the_issue(api, db, make):
    owner, outsider = make.user(), make.user()
    public = make.project(visibility="public", members={owner: REPORTER})
    one, two = make.issue(public, owner), make.issue(public, owner)
    link(api, owner, public, one, two)
    link_id = api(outsider).get(links_url(public, one)).json()[0]["issue_link_id"]
    r = api(outsider).delete(links_url(public, one, link_id))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert len(db.scalars(select(IssueLink)).all()) == 1


def test_the_list_costs_the_same_for_one_link_and_for_many(api, make, runtime):
    dev = make.user()
    group = make.group(owners=[dev])
    projects = [make.project(namespace=group) for _ in range(3)]
    source = make.issue(projects[0], dev)
    label = make.label(project=projects[0])
    milestone = make.milestone(project=projects[0])

    def add(i: int) -> None:
        target = make.issue(
            projects[i % 3],
            make.user(),
            labels=[label] if i % 3 == 0 else [],
            milestone=milestone if i % 3 == 0 else None,
        )
        assert link(api, dev, projects[0], source, target).status_code == 201

    def call():
        return api(dev).get(links_url(projects[0], source))

    add(0)
    one = statements(runtime, call)
    for i in range(1, 8):
        add(i)
    assert len(call().json()) == 8
    many = statements(runtime, call)
    assert len(one) == len(many)


def test_a_membership_elsewhere_does_not_show_an_issue_of_a_private_project(api, make):
    owner, guest = make.user(), make.user()
    mine = make.project(members={owner: REPORTER, guest: GUEST})
    private = make.project(members={owner: REPORTER})
    here, there = make.issue(mine, owner), make.issue(private, owner)
    assert link(api, owner, mine, here, there).status_code == 201
    assert api(guest).get(links_url(mine, here)).json() == []
    assert [i["id"] for i in api(owner).get(links_url(mine, here)).json()] == [there.id]


def test_ids_past_any_row_are_not_found(api, setup):
    dev, project, one, _ = setup
    big = 2**63 - 1
    r = api(dev).post(
        links_url(project, one), json={"target_project_id": project.id, "target_issue_iid": big}
    )
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    r = api(dev).get(links_url(project, one, big))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_linking_takes_the_right_to_link_on_both_ends(api, make, db):
    owner, stranger = make.user(), make.user()
    public = make.project(owner=owner, visibility="public")
    own = make.project(owner=stranger, visibility="private")
    target = make.issue(public, owner)
    source = make.issue(own, stranger)
    r = api(stranger).post(
        f"/projects/{own.id}/issues/{source.iid}/links",
        json={"target_project_id": public.id, "target_issue_iid": target.iid},
    )
    assert r.status_code == 403
    db.expire_all()
    assert db.scalars(select(IssueLink.id)).all() == []
    assert db.scalars(select(Note.id).where(Note.noteable_id == target.id)).all() == []
