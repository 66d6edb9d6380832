"""The three issue lists (/issues, /groups/:id/issues, /projects/:id/issues): who sees what,
every filter, the orders, references, and what a page costs the database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from kiln.models import AwardEmoji, LabelPriority
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.models.notes import ISSUE
from tests.statements import count


def iids(r) -> list[int]:
    assert r.status_code == 200, r.text
    return [i["iid"] for i in r.json()]


def listed(api, caller, path, **params) -> list[int]:
    return iids(api(caller).get(path, params=params))


@pytest.fixture
def world(make):
    """A project of its owner, with a few issues of different shapes."""
    owner = make.user()
    other = make.user()
    p = make.project(owner=owner, members={other: DEVELOPER})
    bug = make.label(project=p, title="bug")
    ui = make.label(project=p, title="UI")
    v1 = make.milestone(project=p, title="v1")
    issues = [
        make.issue(p, owner, title="Crash on start", labels=[bug], milestone=v1, weight=3),
        make.issue(p, other, title="Button colour", labels=[bug, ui], assignees=[other]),
        make.issue(p, owner, title="Docs", description="explain the crash", state="closed"),
        make.issue(p, other, title="Secret", confidential=True),
    ]
    return owner, other, p, issues


def path(p) -> str:
    return f"/projects/{p.id}/issues"


# ----------------------------------------------------------------------------- visibility


def test_project_list_is_newest_first_and_holds_every_state_by_default(api, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p)) == [4, 3, 2, 1]


def test_anonymous_callers_read_public_projects_lists_but_not_private_ones(api, make, world):
    owner, *_ = world
    public = make.project(owner=owner, visibility="public")
    make.issue(public, owner)
    make.issue(public, owner, confidential=True)
    assert listed(api, None, path(public)) == [1]
    private = world[2]
    r = api().get(path(private))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_global_list_needs_authentication(api):
    r = api().get("/issues")
    assert r.status_code == 401


def test_confidential_issues_show_to_reporters_authors_and_assignees_only(api, make):
    owner, author, assignee, guest, reporter = (make.user() for _ in range(5))
    p = make.project(owner=owner, visibility="public", members={guest: GUEST, reporter: REPORTER})
    make.issue(p, author, title="open")
    make.issue(p, author, title="secret", confidential=True, assignees=[assignee])
    for caller, seen in ((owner, [2, 1]), (reporter, [2, 1]), (author, [2, 1]), (assignee, [2, 1])):
        assert listed(api, caller, path(p)) == seen
    assert listed(api, guest, path(p)) == [1]
    assert listed(api, make.user(), path(p)) == [1]
    assert listed(api, "root", path(p)) == [2, 1]


def test_confidential_issues_across_projects_follow_each_projects_level(api, make):
    reporter = make.user()
    a = make.project(visibility="public", members={reporter: REPORTER})
    b = make.project(visibility="public")
    make.issue(a, 1, title="a-secret", confidential=True)
    make.issue(b, 1, title="b-secret", confidential=True)
    make.issue(b, 1, title="b-open")
    titles = [i["title"] for i in api(reporter).get("/issues", params={"scope": "all"}).json()]
    assert titles == ["b-open", "a-secret"]


def test_global_list_defaults_to_the_callers_own_issues(api, world):
    _owner, other, *_ = world
    assert listed(api, other, "/issues") == [4, 2]
    assert listed(api, other, "/issues", scope="all") == [4, 3, 2, 1]
    assert listed(api, other, "/issues", scope="assigned_to_me") == [2]
    assert listed(api, other, "/issues", scope="assigned-to-me") == [2]
    assert listed(api, other, "/issues", scope="created-by-me") == [4, 2]


def test_cross_project_lists_leave_out_projects_whose_issues_are_closed(api, make):
    u = make.user()
    public = make.project(visibility="public")
    disabled = make.project(visibility="public", issues_access_level="disabled")
    members_only = make.project(visibility="public", issues_access_level="private")
    hidden = make.project(visibility="private")
    for p in (public, disabled, members_only, hidden):
        make.issue(p, 1, title=f"in {p.path}")
    titles = [i["title"] for i in api(u).get("/issues", params={"scope": "all"}).json()]
    assert titles == [f"in {public.path}"]
    titles = [i["title"] for i in api("root").get("/issues", params={"scope": "all"}).json()]
    assert titles == [f"in {p.path}" for p in (hidden, members_only, public)]  # not the disabled one


def test_a_project_with_issues_disabled_refuses_its_list(api, make):
    u = make.user()
    p = make.project(owner=u, issues_access_level="disabled")
    make.issue(p, u)
    assert api(u).get(path(p)).status_code == 403
    enabled = make.project(owner=u)
    make.issue(enabled, u)
    assert listed(api, u, path(enabled)) == [1]


def test_group_list_holds_subgroups_and_leaves_out_archived_projects_by_default(api, make):
    u = make.user()
    g = make.group(owners=[u])
    sub = make.group(parent=g)
    top = make.project(namespace=g, path="top")
    deep = make.project(namespace=sub, path="deep")
    archived = make.project(namespace=g, path="old", archived=True)
    make.issue(top, u, title="top")
    make.issue(deep, u, title="deep")
    make.issue(archived, u, title="old")
    r = api(u).get(f"/groups/{g.id}/issues")
    assert [i["title"] for i in r.json()] == ["deep", "top"]
    refs = {i["title"]: i["references"]["relative"] for i in r.json()}
    assert refs == {"top": "top#1", "deep": f"{g.path}/{sub.path}/deep#1"}
    r = api(u).get(f"/groups/{g.id}/issues", params={"non_archived": "false"})
    assert [i["title"] for i in r.json()] == ["old", "deep", "top"]


def test_group_list_of_a_hidden_group_is_404(api, make):
    g = make.group()
    r = api(make.user()).get(f"/groups/{g.id}/issues")
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})


def test_references_are_relative_to_where_the_list_is(api, world):
    owner, _, p, _ = world
    own = api(owner).get(path(p)).json()[0]["references"]
    assert own == {"short": "#4", "relative": "#4", "full": f"{owner.username}/{p.path}#4"}
    everywhere = api(owner).get("/issues", params={"scope": "all"}).json()[0]["references"]
    assert everywhere["relative"] == f"{owner.username}/{p.path}#4"


# ----------------------------------------------------------------------------- filters


def test_state_filter(api, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p), state="opened") == [4, 2, 1]
    assert listed(api, owner, path(p), state="closed") == [3]
    assert listed(api, owner, path(p), state="all") == [4, 3, 2, 1]


def test_labels_must_all_be_carried(api, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p), labels="bug") == [2, 1]
    assert listed(api, owner, path(p), labels="bug,UI") == [2]
    assert listed(api, owner, path(p), **{"labels[]": ["bug", "UI"]}) == [2]
    assert listed(api, owner, path(p), labels="ui") == []


def test_label_keywords_none_and_any_ignore_case(api, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p), labels="None") == [4, 3]
    assert listed(api, owner, path(p), labels="none") == [4, 3]
    assert listed(api, owner, path(p), labels="No Label") == [4, 3]
    assert listed(api, owner, path(p), labels="Any") == [2, 1]


def test_labels_with_details(api, world):
    owner, _, p, _ = world
    issue = api(owner).get(path(p), params={"with_labels_details": "true", "iids[]": 2}).json()[0]
    assert [label["name"] for label in issue["labels"]] == ["UI", "bug"]
    assert set(issue["labels"][0]) == {"id", "name", "color", "description", "description_html", "text_color"}
    assert issue["labels"][0]["text_color"] == "#FFFFFF"


def test_milestone_filter(api, make, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p), milestone="v1") == [1]
    assert listed(api, owner, path(p), milestone="None") == [4, 3, 2]
    assert listed(api, owner, path(p), milestone="Any") == [1]
    assert listed(api, owner, path(p), milestone="nothing") == []


def test_milestone_upcoming_and_started(api, make):
    u = make.user()
    p = make.project(owner=u)
    today = date.today()
    soon = make.milestone(project=p, title="soon", due_date=today + timedelta(days=3))
    later = make.milestone(project=p, title="later", due_date=today + timedelta(days=30))
    running = make.milestone(project=p, title="running", start_date=today - timedelta(days=1))
    make.issue(p, u, milestone=soon)
    make.issue(p, u, milestone=later)
    make.issue(p, u, milestone=running)
    past = make.milestone(project=p, title="past", due_date=today - timedelta(days=2))
    future = make.milestone(project=p, title="future", start_date=today + timedelta(days=2))
    make.issue(p, u, milestone=past)
    make.issue(p, u, milestone=future)
    assert listed(api, u, path(p), milestone="Upcoming") == [1]
    assert listed(api, u, path(p), milestone="Started") == [3]


def test_author_filters(api, world):
    owner, other, p, _ = world
    assert listed(api, owner, path(p), author_id=other.id) == [4, 2]
    assert listed(api, owner, path(p), author_username=other.username.upper()) == [4, 2]
    assert listed(api, other, "/issues", author_id=owner.id) == []  # still created_by_me
    assert listed(api, other, "/issues", author_id=owner.id, scope="all") == [3, 1]


def test_author_id_and_author_username_together_are_refused(api, world):
    owner, other, p, _ = world
    r = api(owner).get(path(p), params={"author_id": other.id, "author_username": other.username})
    assert (r.status_code, r.json()) == (400, {"error": "author_id, author_username are mutually exclusive"})


def test_assignee_filters(api, world):
    owner, other, p, _ = world
    assert listed(api, owner, path(p), assignee_id=other.id) == [2]
    assert listed(api, owner, path(p), assignee_id="None") == [4, 3, 1]
    assert listed(api, owner, path(p), assignee_id="Any") == [2]
    assert listed(api, owner, path(p), assignee_username=other.username) == [2]
    assert listed(api, owner, path(p), **{"assignee_username[]": [other.username]}) == [2]
    r = api(owner).get(path(p), params={"assignee_id": other.id, "assignee_username": other.username})
    assert r.status_code == 400
    assert api(owner).get(path(p), params={"assignee_id": "someone"}).status_code == 400


def test_my_reaction_emoji(api, make, db, world):
    owner, other, p, issues = world
    db.add(AwardEmoji(name="thumbsup", user_id=owner.id, awardable_type=ISSUE, awardable_id=issues[1].id))
    db.add(AwardEmoji(name="tada", user_id=owner.id, awardable_type=ISSUE, awardable_id=issues[2].id))
    db.add(AwardEmoji(name="thumbsup", user_id=other.id, awardable_type=ISSUE, awardable_id=issues[0].id))
    db.flush()
    assert listed(api, owner, path(p), my_reaction_emoji="thumbsup") == [2]
    assert listed(api, owner, path(p), my_reaction_emoji="Any") == [3, 2]
    assert listed(api, owner, path(p), my_reaction_emoji="None") == [4, 1]
    assert listed(api, owner, path(p), **{"not[my_reaction_emoji]": "thumbsup"}) == [4, 3, 1]


def test_weight_filter(api, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p), weight=3) == [1]
    assert listed(api, owner, path(p), weight="None") == [4, 3, 2]
    assert listed(api, owner, path(p), weight="Any") == [1]
    assert api(owner).get(path(p), params={"weight": "heavy"}).status_code == 400


def test_iids_filter_and_its_bad_values(api, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p), **{"iids[]": [1, 3]}) == [3, 1]
    assert listed(api, owner, path(p), iids=2) == [2]
    r = api(owner).get(path(p), params={"iids[]": "abc"})
    assert (r.status_code, r.json()) == (400, {"error": "iids is invalid"})


def test_search_in_title_and_description(api, make, world):
    owner, _, p, _ = world
    assert listed(api, owner, path(p), search="crash") == [3, 1]
    assert listed(api, owner, path(p), search="crash", **{"in": "title"}) == [1]
    assert listed(api, owner, path(p), search="crash", **{"in": "description"}) == [3]
    make.issue(p, owner, title="500 error")
    assert listed(api, owner, path(p), search="50%") == []
    assert listed(api, owner, path(p), search="500") == [5]
    assert api(owner).get(path(p), params={"search": "x", "in": "body"}).status_code == 400


def test_created_and_updated_ranges(api, make):
    u = make.user()
    p = make.project(owner=u)
    old = datetime(2020, 1, 1, tzinfo=UTC)
    make.issue(p, u, created_at=old, updated_at=old)
    make.issue(p, u)
    assert listed(api, u, path(p), created_before="2021-01-01") == [1]
    assert listed(api, u, path(p), created_after="2021-01-01T00:00:00Z") == [2]
    assert listed(api, u, path(p), updated_before="2021-01-01") == [1]
    assert listed(api, u, path(p), updated_after="2021-01-01") == [2]
    r = api(u).get(path(p), params={"created_after": "yesterday"})
    assert (r.status_code, r.json()) == (400, {"error": "created_after is invalid"})


def test_due_date_filter(api, make):
    u = make.user()
    p = make.project(owner=u)
    today = date.today()
    make.issue(p, u, due_date=today - timedelta(days=1))
    make.issue(p, u, due_date=today)
    make.issue(p, u, due_date=today + timedelta(days=1))
    make.issue(p, u)
    assert listed(api, u, path(p), due_date="overdue") == [1]
    assert listed(api, u, path(p), due_date="today") == [2]
    assert listed(api, u, path(p), due_date="tomorrow") == [3]
    assert listed(api, u, path(p), due_date="0") == [4]
    assert listed(api, u, path(p), due_date="any") == [3, 2, 1]
    assert api(u).get(path(p), params={"due_date": "someday"}).status_code == 400


def test_confidential_and_issue_type_filters(api, make, world):
    owner, _, p, _ = world
    make.issue(p, owner, issue_type="incident")
    assert listed(api, owner, path(p), confidential="true") == [4]
    assert listed(api, owner, path(p), confidential="false") == [5, 3, 2, 1]
    assert listed(api, owner, path(p), issue_type="incident") == [5]
    assert api(owner).get(path(p), params={"issue_type": "bug"}).status_code == 400


def test_not_filters(api, world):
    owner, other, p, _ = world
    assert listed(api, owner, path(p), **{"not[labels]": "UI"}) == [4, 3, 1]
    assert listed(api, owner, path(p), **{"not[labels]": "bug,UI"}) == [4, 3]
    assert listed(api, owner, path(p), **{"not[milestone]": "v1"}) == [4, 3, 2]
    assert listed(api, owner, path(p), **{"not[author_id]": other.id}) == [3, 1]
    assert listed(api, owner, path(p), **{"not[author_username]": other.username}) == [3, 1]
    assert listed(api, owner, path(p), **{"not[assignee_id]": other.id}) == [4, 3, 1]
    assert listed(api, owner, path(p), **{"not[assignee_username][]": other.username}) == [4, 3, 1]
    assert listed(api, owner, path(p), **{"not[search]": "crash"}) == [4, 2]
    assert listed(api, owner, path(p), **{"not[search]": "crash", "not[in]": "title"}) == [4, 3, 2]
    assert listed(api, owner, path(p), **{"not[weight]": 3}) == [4, 3, 2]
    assert listed(api, owner, path(p), **{"not[iids][]": [1, 2]}) == [4, 3]


# ----------------------------------------------------------------------------- orders


def test_order_by_and_sort(api, make, db):
    u = make.user()
    p = make.project(owner=u)
    today = date.today()
    at = [datetime(2020, 1, d, tzinfo=UTC) for d in (1, 2, 3)]
    make.issue(
        p,
        u,
        title="b",
        due_date=today + timedelta(days=2),
        weight=1,
        upvotes=5,
        relative_position=30,
        created_at=at[1],
        updated_at=at[2],
    )
    make.issue(
        p,
        u,
        title="c",
        due_date=today + timedelta(days=1),
        upvotes=9,
        relative_position=10,
        created_at=at[0],
        updated_at=at[1],
    )
    make.issue(p, u, title="a", weight=7, relative_position=20, created_at=at[2], updated_at=at[0])
    assert listed(api, u, path(p), sort="asc") == [2, 1, 3]
    assert listed(api, u, path(p)) == [3, 1, 2]
    assert listed(api, u, path(p), order_by="title", sort="asc") == [3, 1, 2]
    assert listed(api, u, path(p), order_by="due_date", sort="asc") == [2, 1, 3]
    assert listed(api, u, path(p), order_by="due_date", sort="desc") == [1, 2, 3]  # none last
    assert listed(api, u, path(p), order_by="popularity") == [2, 1, 3]
    assert listed(api, u, path(p), order_by="weight", sort="asc") == [1, 3, 2]
    assert listed(api, u, path(p), order_by="relative_position", sort="asc") == [2, 3, 1]
    assert listed(api, u, path(p), order_by="updated_at", sort="asc") == [3, 2, 1]
    assert listed(api, u, path(p), order_by="updated_at") == [1, 2, 3]


def test_label_priority_and_milestone_due_orders(api, make, db):
    u = make.user()
    p = make.project(owner=u)
    high, low = make.label(project=p, title="high"), make.label(project=p, title="low")
    db.add_all([LabelPriority(project_id=p.id, label_id=high.id, priority=1)])
    db.add_all([LabelPriority(project_id=p.id, label_id=low.id, priority=5)])
    db.flush()
    soon = make.milestone(project=p, due_date=date.today() + timedelta(days=1))
    later = make.milestone(project=p, due_date=date.today() + timedelta(days=9))
    make.issue(p, u, labels=[low], milestone=later)
    make.issue(p, u, labels=[high])
    make.issue(p, u, milestone=soon)
    assert listed(api, u, path(p), order_by="label_priority", sort="asc") == [2, 1, 3]
    assert listed(api, u, path(p), order_by="milestone_due", sort="asc") == [3, 1, 2]
    assert listed(api, u, path(p), order_by="priority", sort="asc") == [3, 1, 2]
    # Within one milestone due date, priority orders by label priority; milestone_due does not.
    make.issue(p, u, labels=[high], milestone=later)
    assert listed(api, u, path(p), order_by="priority", sort="asc") == [3, 4, 1, 2]


def test_unknown_order_and_sort_are_refused(api, world):
    owner, _, p, _ = world
    r = api(owner).get(path(p), params={"order_by": "colour"})
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})
    r = api(owner).get(path(p), params={"sort": "up"})
    assert (r.status_code, r.json()) == (400, {"error": "sort does not have a valid value"})
    r = api(owner).get(path(p), params={"state": "done"})
    assert (r.status_code, r.json()) == (400, {"error": "state does not have a valid value"})


def test_pagination_headers(api, make):
    u = make.user()
    p = make.project(owner=u)
    for _ in range(5):
        make.issue(p, u)
    r = api(u).get(path(p), params={"per_page": 2, "page": 2})
    assert iids(r) == [3, 2]
    assert (r.headers["X-Total"], r.headers["X-Total-Pages"], r.headers["X-Next-Page"]) == ("5", "3", "3")


# ----------------------------------------------------------------------------- statements


def _fill(make, p, owner, n, labels, milestone, epic_group=None):
    made = []
    for i in range(n):
        helper = make.user()
        made.append(make.issue(p, owner, labels=labels, assignees=[helper], milestone=milestone, weight=i))
    if epic_group is not None:
        make.epic(epic_group, owner, issues=made)
    return made


def test_a_page_costs_the_same_statements_for_one_issue_as_for_many(api, make, runtime):
    owner = make.user()
    g = make.group(owners=[owner])
    p = make.project(namespace=g)
    bug = make.label(project=p, title="bug")
    m = make.milestone(project=p)
    _fill(make, p, owner, 1, [bug], m, g)

    def call():
        return api(owner).get(path(p), params={"labels": "bug", "state": "opened"})

    one = count(runtime, call)
    _fill(make, p, owner, 12, [bug, make.label(group=g, title="g")], make.milestone(group=g), g)
    many = count(runtime, call)
    assert len(call().json()) == 13
    assert one == many


def test_global_and_group_lists_cost_the_same_for_one_issue_as_for_many(api, make, runtime):
    owner = make.user()
    g = make.group(owners=[owner])
    p = make.project(namespace=g)
    _fill(make, p, owner, 1, [make.label(project=p)], make.milestone(project=p))

    def global_list():
        return api(owner).get("/issues", params={"scope": "all", "search": "issue"})

    def group_list():
        return api(owner).get(f"/groups/{g.id}/issues")

    before = (count(runtime, global_list), count(runtime, group_list))
    other = make.project(namespace=g)
    _fill(make, other, owner, 10, [make.label(project=other)], make.milestone(project=other))
    assert (count(runtime, global_list), count(runtime, group_list)) == before


def test_a_search_across_projects_counts_its_matches_in_its_pages(api, make):
    u = make.user()
    p = make.project(owner=u)
    for n in range(5):
        make.issue(p, u, title=f"needle {n}")
    make.issue(p, u, title="hay")
    r = api(u).get("/issues", params={"search": "NEEDLE", "per_page": 2, "page": 2})
    assert iids(r) == [3, 2]
    assert (r.headers["X-Total"], r.headers["X-Total-Pages"], r.headers["X-Next-Page"]) == ("5", "3", "3")
    r = api(u).get("/issues", params={"search": "needle", "per_page": 2, "page": 9})
    assert (iids(r), r.headers["X-Total"]) == ([], "5")


def test_anonymous_callers_read_public_groups_lists(api, make):
    u = make.user()
    g = make.group(owners=[u], visibility="public")
    make.issue(make.project(namespace=g, visibility="public"), u, title="seen")
    make.issue(make.project(namespace=g, visibility="private"), u, title="hidden")
    assert [i["title"] for i in api().get(f"/groups/{g.id}/issues").json()] == ["seen"]


def test_the_global_list_leaves_out_archived_projects_unless_asked(api, make):
    u = make.user()
    make.issue(make.project(owner=u, archived=True), u, title="old")
    make.issue(make.project(owner=u), u, title="new")
    assert [i["title"] for i in api(u).get("/issues").json()] == ["new"]
    assert [i["title"] for i in api(u).get("/issues", params={"non_archived": False}).json()] == [
        "new",
        "old",
    ]
