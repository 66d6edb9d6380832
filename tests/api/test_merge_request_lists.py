"""The three merge request lists: /merge_requests, /projects/:id/merge_requests and
/groups/:id/merge_requests, each filter, who sees what, and their statement budgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from kiln.models import Approval, ApprovalRule, ApprovalRuleUser, AwardEmoji, MergeRequest
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.models.notes import MERGE_REQUEST
from tests.statements import count


def path(p) -> str:
    return f"/projects/{p.id}/merge_requests"


def iids(r) -> list[int]:
    assert r.status_code == 200, r.text
    return [m["iid"] for m in r.json()]


def set_fields(db, mr, **values):
    db.execute(update(MergeRequest).where(MergeRequest.id == mr.id).values(**values))
    db.commit()


def test_a_project_list_newest_first_with_every_field(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    for _ in range(3):
        make.merge_request(p, u)
    r = api(u).get(path(p))
    assert iids(r) == [3, 2, 1]
    assert r.json()[0]["references"]["relative"] == "!3"
    assert r.headers["X-Total"] == "3"


def test_state_filter(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    make.merge_request(p, u, state="closed")
    set_fields(db, make.merge_request(p, u), state="merged")
    make.merge_request(p, u, state="locked")
    assert iids(api(u).get(path(p), params={"state": "opened"})) == [1]
    assert iids(api(u).get(path(p), params={"state": "closed"})) == [2]
    assert iids(api(u).get(path(p), params={"state": "merged"})) == [3]
    assert iids(api(u).get(path(p), params={"state": "locked"})) == [4]
    assert iids(api(u).get(path(p), params={"state": "all"})) == [4, 3, 2, 1]
    r = api(u).get(path(p), params={"state": "bogus"})
    assert (r.status_code, r.json()) == (400, {"error": "state does not have a valid value"})


def test_order_by_and_sort(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    a, b, c = (make.merge_request(p, u, title=t) for t in ("b", "c", "a"))
    now = datetime.now(UTC)
    set_fields(db, a, updated_at=now + timedelta(hours=2), merged_at=now)
    set_fields(db, b, updated_at=now + timedelta(hours=1), merged_at=now + timedelta(hours=1))
    assert iids(api(u).get(path(p), params={"sort": "asc"})) == [1, 2, 3]
    assert iids(api(u).get(path(p), params={"order_by": "updated_at"})) == [1, 2, 3]
    assert iids(api(u).get(path(p), params={"order_by": "title", "sort": "asc"})) == [3, 1, 2]
    assert iids(api(u).get(path(p), params={"order_by": "merged_at"})) == [2, 1, 3]
    r = api(u).get(path(p), params={"order_by": "bogus"})
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})
    assert c.iid == 3


def test_milestone_filter(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    m = make.milestone(project=p, title="v1")
    make.merge_request(p, u, milestone=m)
    make.merge_request(p, u)
    assert iids(api(u).get(path(p), params={"milestone": "v1"})) == [1]
    assert iids(api(u).get(path(p), params={"milestone": "None"})) == [2]
    assert iids(api(u).get(path(p), params={"milestone": "Any"})) == [1]
    assert iids(api(u).get(path(p), params={"not[milestone]": "v1"})) == [2]


def test_view_simple(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u, title="T", description="D")
    [v] = api(u).get(path(p), params={"view": "simple"}).json()
    assert set(v) == {
        "id",
        "iid",
        "project_id",
        "title",
        "description",
        "state",
        "created_at",
        "updated_at",
        "web_url",
    }


def test_labels_filter_and_details(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    bug, ui = make.label(project=p, title="bug"), make.label(project=p, title="ui")
    make.merge_request(p, u, labels=[bug, ui])
    make.merge_request(p, u, labels=[bug])
    make.merge_request(p, u)
    assert iids(api(u).get(path(p), params={"labels": "bug"})) == [2, 1]
    assert iids(api(u).get(path(p), params={"labels": "bug,ui"})) == [1]
    assert iids(api(u).get(path(p), params={"labels": "None"})) == [3]
    assert iids(api(u).get(path(p), params={"labels": "Any"})) == [2, 1]
    assert iids(api(u).get(path(p), params={"not[labels]": "ui"})) == [3, 2]
    v = api(u).get(path(p), params={"labels": "ui", "with_labels_details": True}).json()[0]
    assert [label["name"] for label in v["labels"]] == ["bug", "ui"]


def test_created_and_updated_bounds(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    old, new = make.merge_request(p, u), make.merge_request(p, u)
    past = datetime(2020, 1, 1, tzinfo=UTC)
    set_fields(db, old, created_at=past, updated_at=past)
    assert iids(api(u).get(path(p), params={"created_after": "2021-01-01T00:00:00Z"})) == [2]
    assert iids(api(u).get(path(p), params={"created_before": "2021-01-01T00:00:00Z"})) == [1]
    assert iids(api(u).get(path(p), params={"updated_after": "2021-01-01T00:00:00Z"})) == [2]
    assert iids(api(u).get(path(p), params={"updated_before": "2021-01-01T00:00:00Z"})) == [1]
    assert new.iid == 2


def test_author_filters_are_exclusive(api, make):
    u, other = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={other: DEVELOPER})
    make.merge_request(p, u)
    make.merge_request(p, other)
    assert iids(api(u).get(path(p), params={"author_id": other.id})) == [2]
    assert iids(api(u).get(path(p), params={"author_username": u.username})) == [1]
    assert iids(api(u).get(path(p), params={"not[author_id]": other.id})) == [1]
    r = api(u).get(path(p), params={"author_id": u.id, "author_username": u.username})
    assert (r.status_code, r.json()) == (400, {"error": "author_id, author_username are mutually exclusive"})


def test_assignee_filters(api, make):
    u, a = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={a: DEVELOPER})
    make.merge_request(p, u, assignees=[a])
    make.merge_request(p, u)
    assert iids(api(u).get(path(p), params={"assignee_id": a.id})) == [1]
    assert iids(api(u).get(path(p), params={"assignee_id": "None"})) == [2]
    assert iids(api(u).get(path(p), params={"assignee_id": "Any"})) == [1]
    assert iids(api(u).get(path(p), params={"assignee_username": a.username})) == [1]
    assert iids(api(u).get(path(p), params={"not[assignee_id]": a.id})) == [2]


def test_reviewer_filters(api, make):
    u, b = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={b: DEVELOPER})
    make.merge_request(p, u, reviewers=[b])
    make.merge_request(p, u)
    assert iids(api(u).get(path(p), params={"reviewer_id": b.id})) == [1]
    assert iids(api(u).get(path(p), params={"reviewer_id": "None"})) == [2]
    assert iids(api(u).get(path(p), params={"reviewer_id": "Any"})) == [1]
    assert iids(api(u).get(path(p), params={"reviewer_username": b.username})) == [1]
    assert iids(api(u).get(path(p), params={"not[reviewer_username]": b.username})) == [2]
    r = api(u).get(path(p), params={"reviewer_id": b.id, "reviewer_username": b.username})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "reviewer_id, reviewer_username are mutually exclusive"},
    )


def test_approved_by_ids(api, make, db):
    u, a, b = make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=u, members={a: DEVELOPER, b: DEVELOPER})
    one, two = make.merge_request(p, u), make.merge_request(p, u)
    make.merge_request(p, u)
    db.add_all(
        [Approval(merge_request_id=one.id, user_id=a.id), Approval(merge_request_id=one.id, user_id=b.id)]
    )
    db.add(Approval(merge_request_id=two.id, user_id=a.id))
    db.commit()
    assert iids(api(u).get(path(p), params={"approved_by_ids[]": [a.id]})) == [2, 1]
    assert iids(api(u).get(path(p), params={"approved_by_ids[]": [a.id, b.id]})) == [1]
    assert iids(api(u).get(path(p), params={"approved_by_ids": "None"})) == [3]
    assert iids(api(u).get(path(p), params={"approved_by_ids": "Any"})) == [2, 1]
    assert iids(api(u).get(path(p), params={"approved_by_usernames[]": [a.username, b.username]})) == [1]
    assert iids(api(u).get(path(p), params={"approved_by_usernames[]": ["None"]})) == [3]
    r = api(u).get(path(p), params={"approved_by_ids[]": [1, 2, 3, 4, 5, 6]})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "approved_by_ids is too long (maximum is 5 elements)"},
    )


def test_approver_ids(api, make, db):
    u, a = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={a: DEVELOPER})
    one = make.merge_request(p, u)
    make.merge_request(p, u)
    rule = ApprovalRule(project_id=p.id, merge_request_id=one.id, name="r", approvals_required=1)
    db.add(rule)
    db.flush()
    db.add(ApprovalRuleUser(rule_id=rule.id, user_id=a.id))
    db.commit()
    assert iids(api(u).get(path(p), params={"approver_ids[]": [a.id]})) == [1]
    assert iids(api(u).get(path(p), params={"approver_ids": "None"})) == [2]
    assert iids(api(u).get(path(p), params={"approver_ids": "Any"})) == [1]


def test_my_reaction_emoji(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    one = make.merge_request(p, u)
    make.merge_request(p, u)
    db.add(AwardEmoji(name="thumbsup", user_id=u.id, awardable_type=MERGE_REQUEST, awardable_id=one.id))
    db.commit()
    assert iids(api(u).get(path(p), params={"my_reaction_emoji": "thumbsup"})) == [1]
    assert iids(api(u).get(path(p), params={"my_reaction_emoji": "None"})) == [2]
    assert iids(api(u).get(path(p), params={"my_reaction_emoji": "Any"})) == [1]


def test_branch_filters(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u, source_branch="feat-a")
    make.merge_request(p, u, source_branch="feat-b")
    assert iids(api(u).get(path(p), params={"source_branch": "feat-a"})) == [1]
    assert iids(api(u).get(path(p), params={"target_branch": "main"})) == [2, 1]
    assert iids(api(u).get(path(p), params={"target_branch": "other"})) == []


def test_search_in_title_and_description(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u, title="Fix the Parser")
    make.merge_request(p, u, title="Other", description="parser notes")
    assert iids(api(u).get(path(p), params={"search": "parser"})) == [2, 1]
    assert iids(api(u).get(path(p), params={"search": "parser", "in": "title"})) == [1]
    assert iids(api(u).get(path(p), params={"search": "parser", "in": "description"})) == [2]
    r = api(u).get(path(p), params={"search": "x", "in": "body"})
    assert (r.status_code, r.json()) == (400, {"error": "in does not have a valid value"})


def test_wip_filter(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u, title="Draft: one")
    make.merge_request(p, u, title="Ready")
    assert iids(api(u).get(path(p), params={"wip": "yes"})) == [1]
    assert iids(api(u).get(path(p), params={"wip": "no"})) == [2]


def test_iids_filter(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    for _ in range(3):
        make.merge_request(p, u)
    assert iids(api(u).get(path(p), params={"iids[]": [1, 3]})) == [3, 1]


def test_deployment_filters_are_accepted_and_ignored(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    assert iids(api(u).get(path(p), params={"deployed_before": "2020-01-01", "deployed_after": "x"})) == [1]


# ----------------------------------------------------------------------------- the global and group lists


def test_the_global_list_shows_the_caller_s_own_by_default(api, make):
    u, other = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={other: DEVELOPER})
    make.merge_request(p, u)
    make.merge_request(p, other, assignees=[u])
    assert iids(api(u).get("/merge_requests")) == [1]
    assert iids(api(u).get("/merge_requests", params={"scope": "assigned_to_me"})) == [2]
    assert iids(api(u).get("/merge_requests", params={"scope": "all"})) == [2, 1]
    assert api().get("/merge_requests").status_code == 401


def test_the_global_list_shows_only_readable_merge_requests(api, make):
    u, guest, reporter = make.user(), make.user(), make.user()
    private = make.project_with_repository(owner=u, members={guest: GUEST, reporter: REPORTER})
    public = make.project_with_repository(owner=u, visibility="public", members={guest: GUEST})
    closed = make.project_with_repository(owner=u, visibility="public", merge_requests_access_level="private")
    make.merge_request(private, u)
    make.merge_request(public, u)
    make.merge_request(closed, u)

    def seen(user):
        return sorted(
            m["project_id"] for m in api(user).get("/merge_requests", params={"scope": "all"}).json()
        )

    assert seen(guest) == [public.id]
    assert seen(reporter) == sorted([private.id, public.id])
    assert seen(make.user()) == [public.id]
    assert seen(u) == sorted([private.id, public.id, closed.id])
    assert len(api("root").get("/merge_requests", params={"scope": "all"}).json()) == 3


def test_a_members_only_feature_shows_its_merge_requests_to_reporters_not_guests(api, make):
    # GitLab's PRIVATE_FEATURES_MIN_ACCESS_LEVEL for merge requests: Reporter, in every list.
    u, guest, reporter = make.user(), make.user(), make.user()
    g = make.group(owners=[u])
    closed = make.project_with_repository(
        owner=u,
        namespace=g,
        visibility="public",
        merge_requests_access_level="private",
        members={guest: GUEST, reporter: REPORTER},
    )
    make.merge_request(closed, u)

    def seen(user, where):
        return [m["project_id"] for m in api(user).get(where, params={"scope": "all"}).json()]

    for where in ("/merge_requests", f"/groups/{g.id}/merge_requests"):
        assert seen(guest, where) == []
        assert seen(reporter, where) == [closed.id]
    assert api(guest).get(path(closed)).status_code == 403
    assert iids(api(reporter).get(path(closed))) == [1]


def test_a_group_list_includes_subgroups_and_skips_archived_projects(api, make):
    u = make.user()
    g = make.group(owners=[u])
    sub = make.group(parent=g, owners=[u])
    p = make.project_with_repository(owner=u, namespace=g)
    q = make.project_with_repository(owner=u, namespace=sub)
    archived = make.project_with_repository(owner=u, namespace=g, archived=True)
    make.merge_request(p, u)
    make.merge_request(q, u)
    make.merge_request(archived, u)
    found = api(u).get(f"/groups/{g.id}/merge_requests").json()
    assert sorted(m["project_id"] for m in found) == sorted([p.id, q.id])
    found = api(u).get(f"/groups/{g.id}/merge_requests", params={"non_archived": False}).json()
    assert len(found) == 3
    relative = {m["project_id"]: m["references"]["relative"] for m in found}
    assert relative[p.id] == f"{p.path}!1"


def test_a_project_list_of_a_hidden_project_is_404_and_closed_feature_403(api, make):
    u, guest = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={guest: GUEST})
    assert api(make.user()).get(path(p)).status_code == 404
    assert api(guest).get(path(p)).status_code == 403


# ----------------------------------------------------------------------------- statements


def _fill(make, p, owner, n):
    for _ in range(n):
        people = [make.user(), make.user()]
        make.merge_request(
            p,
            owner,
            labels=[make.label(project=p)],
            assignees=people[:1],
            reviewers=people[1:],
            milestone=make.milestone(project=p),
        )


def test_a_page_costs_the_same_statements_for_one_merge_request_as_for_many(api, make, runtime):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    _fill(make, p, owner, 1)

    def call():
        return api(owner).get(path(p), params={"state": "opened", "labels": "Any"})

    one = count(runtime, call)
    _fill(make, p, owner, 19)
    many = count(runtime, call)
    assert len(call().json()) == 20
    assert one == many


def test_global_and_group_lists_cost_the_same_for_one_as_for_many(api, make, runtime):
    owner = make.user()
    g = make.group(owners=[owner])
    p = make.project_with_repository(owner=owner, namespace=g)
    _fill(make, p, owner, 1)

    def global_list():
        return api(owner).get("/merge_requests", params={"scope": "all", "search": "merge"})

    def group_list():
        return api(owner).get(f"/groups/{g.id}/merge_requests")

    before = (count(runtime, global_list), count(runtime, group_list))
    other = make.project_with_repository(owner=owner, namespace=g)
    _fill(make, other, owner, 10)
    assert (count(runtime, global_list), count(runtime, group_list)) == before
