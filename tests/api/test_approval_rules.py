"""Approval rules: a project's (GitLab's project approval rules API) and a merge request's own
(merge request approval rules), one rule per test, with the payloads python-gitlab sends."""

from __future__ import annotations

from sqlalchemy import select

from kiln.models import ApprovalRule, ProtectedBranch
from kiln.models.namespaces import DEVELOPER, MAINTAINER, REPORTER
from tests.api.test_members import basic
from tests.statements import count


def rules_url(p, rule_id: int | None = None) -> str:
    base = f"/projects/{p.id}/approval_rules"
    return base if rule_id is None else f"{base}/{rule_id}"


def mr_rules_url(p, mr, rule_id: int | None = None) -> str:
    base = f"/projects/{p.id}/merge_requests/{mr.iid}/approval_rules"
    return base if rule_id is None else f"{base}/{rule_id}"


def state_url(p, mr) -> str:
    return f"/projects/{p.id}/merge_requests/{mr.iid}/approval_state"


def setup(make, **project_fields):
    owner = make.user()
    dev, dev2, maint = make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=owner, **project_fields)
    for u, level in ((dev, DEVELOPER), (dev2, DEVELOPER), (maint, MAINTAINER)):
        make.member(p, u, level)
    return p, owner, dev, dev2, maint


def create(api, who, p, **body):
    body.setdefault("name", "rule")
    body.setdefault("approvals_required", 1)
    r = api(who).post(rules_url(p), json=body)
    assert r.status_code == 201, r.text
    return r.json()


def listed(api, who, url: str) -> list[tuple[str, int]]:
    """The name and approvals_required of each rule the list at `url` holds."""
    r = api(who).get(url)
    assert r.status_code == 200, r.text
    return [(x["name"], x["approvals_required"]) for x in r.json()]


# ----------------------------------------------------------------------------- project rules


def test_a_new_rule_has_the_specs_shape(api, make, db, settings):
    p, owner, dev, dev2, maint = setup(make)
    g = make.group(members={dev2: DEVELOPER}, visibility="internal")
    branch = ProtectedBranch(project_id=p.id, name="release/*", merge_access_level=30)
    db.add(branch)
    db.commit()
    r = api(owner).post(
        rules_url(p),
        json={
            "name": "Security",
            "approvals_required": 2,
            "user_ids": [maint.id],
            "group_ids": [g.id],
            "protected_branch_ids": [branch.id],
        },
    )
    assert r.status_code == 201, r.text
    body = r.json()
    base = settings.external_url
    assert body == {
        "id": body["id"],
        "name": "Security",
        "rule_type": "regular",
        "eligible_approvers": sorted([basic(maint), basic(dev2)], key=lambda u: u["id"]),
        "approvals_required": 2,
        "users": [basic(maint)],
        "groups": [
            {
                "id": g.id,
                "name": g.name,
                "path": g.path,
                "description": "",
                "visibility": "internal",
                "lfs_enabled": True,
                "avatar_url": None,
                "web_url": f"{base}/groups/{g.full_path}",
                "request_access_enabled": True,
                "full_name": g.full_name,
                "full_path": g.full_path,
                "parent_id": None,
                "ldap_cn": None,
                "ldap_access": None,
            }
        ],
        "contains_hidden_groups": False,
        "protected_branches": [
            {
                "id": branch.id,
                "name": "release/*",
                "push_access_levels": [{"access_level": 40, "access_level_description": "Maintainers"}],
                "merge_access_levels": [
                    {"access_level": 30, "access_level_description": "Developers + Maintainers"}
                ],
                "unprotect_access_levels": [{"access_level": 40, "access_level_description": "Maintainers"}],
                "code_owner_approval_required": False,
            }
        ],
        "applies_to_all_protected_branches": False,
    }
    assert api(dev).get(rules_url(p)).json() == [body]
    assert api(dev).get(rules_url(p, body["id"])).json() == body


def test_name_and_approvals_required_are_required(api, make):
    p, owner, *_ = setup(make)
    r = api(owner).post(rules_url(p), json={"approvals_required": 1})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing"})
    r = api(owner).post(rules_url(p), json={"name": "x"})
    assert (r.status_code, r.json()) == (400, {"error": "approvals_required is missing"})
    assert listed(api, owner, rules_url(p)) == []


def test_approvals_required_may_not_be_negative(api, make):
    p, owner, *_ = setup(make)
    r = api(owner).post(rules_url(p), json={"name": "x", "approvals_required": -1})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"approvals_required": ["must be greater than or equal to 0"]}},
    )
    assert listed(api, owner, rules_url(p)) == []


def test_names_are_unique_in_a_project(api, make):
    p, owner, *_ = setup(make)
    create(api, owner, p, name="same")
    r = api(owner).post(rules_url(p), json={"name": "same", "approvals_required": 2})
    assert (r.status_code, r.json()) == (400, {"message": {"name": ["has already been taken"]}})
    assert listed(api, owner, rules_url(p)) == [("same", 1)]


def test_one_any_approver_rule_per_project(api, make):
    p, owner, *_ = setup(make)
    made = create(api, owner, p, name="any", rule_type="any_approver", user_ids=[owner.id])
    assert (made["rule_type"], made["users"]) == ("any_approver", [])
    r = api(owner).post(
        rules_url(p), json={"name": "any2", "approvals_required": 1, "rule_type": "any_approver"}
    )
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"rule_type": ["any-approver for the project already exists"]}},
    )
    assert listed(api, owner, rules_url(p)) == [("any", 1)]


def test_only_members_are_named_and_usernames_count(api, make):
    p, owner, dev, dev2, _maint = setup(make)
    outsider = make.user()
    made = create(api, owner, p, user_ids=[outsider.id, dev.id], usernames=[dev2.username.upper()])
    assert [u["id"] for u in made["users"]] == sorted([dev.id, dev2.id])


def test_protected_branches_of_other_projects_are_left_out(api, make, db):
    p, owner, *_ = setup(make)
    other = make.project_with_repository(owner=owner)
    theirs = ProtectedBranch(project_id=other.id, name="x")
    db.add(theirs)
    db.commit()
    assert create(api, owner, p, protected_branch_ids=[theirs.id])["protected_branches"] == []


def test_groups_the_writer_cannot_see_are_left_out(api, make):
    p, owner, *_ = setup(make)
    hidden = make.group()
    assert create(api, owner, p, group_ids=[hidden.id])["groups"] == []


def test_groups_hidden_from_the_reader_are_counted_not_shown(api, make):
    p, owner, dev, _dev2, _maint = setup(make)
    private = make.group(owners=[owner])
    made = create(api, owner, p, group_ids=[private.id])
    assert (len(made["groups"]), made["contains_hidden_groups"]) == (1, False)
    seen = api(dev).get(rules_url(p, made["id"])).json()
    assert (seen["groups"], seen["contains_hidden_groups"]) == ([], True)


def test_group_members_are_eligible_with_those_inherited_from_parents(api, make):
    p, owner, dev, dev2, _maint = setup(make)
    parent = make.group(owners=[owner], members={dev: DEVELOPER})
    child = make.group(parent=parent, members={dev2: DEVELOPER})
    made = create(api, owner, p, group_ids=[child.id])
    assert [u["id"] for u in made["eligible_approvers"]] == sorted([owner.id, dev.id, dev2.id])


def test_put_replaces_users_and_groups(api, make):
    p, owner, dev, dev2, maint = setup(make)
    g = make.group(owners=[owner])
    made = create(api, owner, p, user_ids=[dev.id, dev2.id], group_ids=[g.id])
    r = api(owner).put(
        rules_url(p, made["id"]), json={"name": "renamed", "approvals_required": 3, "user_ids": [maint.id]}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["name"], body["approvals_required"]) == ("renamed", 3)
    assert ([u["id"] for u in body["users"]], body["groups"]) == ([maint.id], [])


def test_a_partial_put_changes_only_what_it_sends(api, make):
    # python-gitlab's `rule.approvals_required = 1; rule.save()` sends that field alone.
    p, owner, dev, *_ = setup(make)
    g = make.group(owners=[owner])
    made = create(api, owner, p, user_ids=[dev.id], group_ids=[g.id])
    r = api(owner).put(rules_url(p, made["id"]), json={"approvals_required": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["name"], body["approvals_required"]) == (made["name"], 1)
    assert ([u["id"] for u in body["users"]], [x["id"] for x in body["groups"]]) == ([dev.id], [g.id])


def test_a_put_with_a_blank_name_is_refused(api, make):
    p, owner, *_ = setup(make)
    made = create(api, owner, p)
    r = api(owner).put(rules_url(p, made["id"]), json={"name": " ", "approvals_required": 2})
    assert (r.status_code, r.json()) == (400, {"message": {"name": ["can't be blank"]}})
    assert listed(api, owner, rules_url(p)) == [("rule", 1)]


def test_delete_removes_the_rule(api, make):
    p, owner, *_ = setup(make)
    made = create(api, owner, p)
    assert api(owner).delete(rules_url(p, made["id"])).status_code == 204
    r = api(owner).delete(rules_url(p, made["id"]))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})
    assert api(owner).get(rules_url(p, made["id"])).status_code == 404


def test_rules_by_role(api, make):
    p, _owner, dev, _dev2, maint = setup(make)
    reporter = make.user()
    make.member(p, reporter, REPORTER)
    made = create(api, maint, p)
    for who in (dev, reporter):
        assert api(who).get(rules_url(p)).status_code == 200
        assert api(who).post(rules_url(p), json={"name": "n", "approvals_required": 1}).status_code == 403
        assert (
            api(who).put(rules_url(p, made["id"]), json={"name": "n", "approvals_required": 1}).status_code
            == 403
        )
        assert api(who).delete(rules_url(p, made["id"])).status_code == 403
    assert listed(api, maint, rules_url(p)) == [("rule", 1)]
    r = api(make.user()).get(rules_url(p))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_a_rule_of_another_project_is_not_found(api, make):
    p, owner, *_ = setup(make)
    other = make.project_with_repository(owner=owner)
    made = create(api, owner, other)
    assert api(owner).get(rules_url(p, made["id"])).status_code == 404
    assert (
        api(owner).put(rules_url(p, made["id"]), json={"name": "n", "approvals_required": 1}).status_code
        == 404
    )


# ----------------------------------------------------------------------------- merge request rules


def test_a_merge_request_without_rules_of_its_own_lists_the_projects(api, make):
    p, owner, dev, _dev2, maint = setup(make)
    made = create(api, owner, p, name="Security", user_ids=[maint.id])
    mr = make.merge_request(p, dev)
    (r,) = api(dev).get(mr_rules_url(p, mr)).json()
    assert (r["id"], r["name"], r["source_rule"], r["overridden"]) == (
        made["id"],
        "Security",
        {"approvals_required": 1},
        False,
    )
    assert "protected_branches" not in r
    assert [u["id"] for u in r["eligible_approvers"]] == [maint.id]


def test_a_rule_from_a_project_rule_copies_its_users_and_is_its_source(api, make):
    p, owner, dev, _dev2, maint = setup(make)
    src = create(api, owner, p, name="Security", user_ids=[maint.id], approvals_required=1)
    mr = make.merge_request(p, dev)
    r = api(dev).post(
        mr_rules_url(p, mr),
        json={"name": "ignored", "approvals_required": 2, "approval_project_rule_id": src["id"]},
    )
    # The copy made on the first write holds the name already; a second one may not.
    assert (r.status_code, r.json()) == (400, {"message": {"name": ["has already been taken"]}})


def test_overridden_shows_a_copy_that_differs_from_its_source(api, make):
    p, owner, dev, dev2, maint = setup(make)
    src = create(api, owner, p, name="Security", user_ids=[maint.id], approvals_required=1)
    mr = make.merge_request(p, dev)
    # python-gitlab's set_approvers: PUT to the rule listed, with these fields.
    listed = api(dev).get(mr_rules_url(p, mr)).json()
    r = api(dev).put(
        mr_rules_url(p, mr, listed[0]["id"]),
        json={
            "id": listed[0]["id"],
            "merge_request_iid": mr.iid,
            "name": "Security",
            "approvals_required": 2,
            "user_ids": [maint.id, dev2.id],
            "group_ids": [],
            "usernames": [],
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["id"] != src["id"]
    assert (body["source_rule"], body["overridden"], body["approvals_required"]) == (
        {"approvals_required": 1},
        True,
        2,
    )
    state = api(dev).get(state_url(p, mr)).json()
    assert state["approval_rules_overwritten"] is True
    assert [x["id"] for x in state["rules"]] == [body["id"]]
    # The project's rule is as it was.
    assert api(dev).get(rules_url(p, src["id"])).json() == src


def test_creating_a_rule_keeps_the_project_rules_as_copies(api, make):
    p, owner, dev, dev2, maint = setup(make)
    create(api, owner, p, name="Security", user_ids=[maint.id])
    mr = make.merge_request(p, dev)
    # python-gitlab's set_approvers with a new name: POST with these fields.
    r = api(dev).post(
        mr_rules_url(p, mr),
        json={
            "name": "name",
            "approvals_required": 1,
            "rule_type": "regular",
            "user_ids": [dev2.id],
            "group_ids": [],
            "usernames": [],
        },
    )
    assert r.status_code == 201, r.text
    assert (r.json()["source_rule"], r.json()["overridden"]) == (None, False)
    rules = api(dev).get(mr_rules_url(p, mr)).json()
    assert [(x["name"], x["overridden"]) for x in rules] == [("Security", False), ("name", False)]
    assert [x["source_rule"] for x in rules] == [{"approvals_required": 1}, None]


def test_a_rule_from_a_project_rule_takes_its_name_users_and_groups(api, make):
    p, owner, dev, dev2, maint = setup(make)
    src = create(api, owner, p, name="Security", user_ids=[maint.id], protected_branch_ids=[])
    other = create(api, owner, p, name="Other", user_ids=[dev2.id])
    mr = make.merge_request(p, dev)
    api(dev).delete(mr_rules_url(p, mr, src["id"]))
    r = api(dev).post(
        mr_rules_url(p, mr),
        json={"name": "x", "approvals_required": 3, "approval_project_rule_id": src["id"]},
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["name"], body["approvals_required"], body["source_rule"], body["overridden"]) == (
        "Security",
        3,
        {"approvals_required": 1},
        True,
    )
    assert [u["id"] for u in body["users"]] == [maint.id]
    names = [x["name"] for x in api(dev).get(mr_rules_url(p, mr)).json()]
    assert names == ["Other", "Security"]
    assert other


def test_merge_request_rules_are_refused_when_overriding_is_disabled(api, make):
    p, owner, dev, _dev2, maint = setup(make, disable_overriding_approvers_per_merge_request=True)
    made = create(api, owner, p, name="Security", user_ids=[maint.id])
    mr = make.merge_request(p, dev)
    r = api(dev).post(mr_rules_url(p, mr), json={"name": "n", "approvals_required": 1})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert (
        api(owner)
        .put(mr_rules_url(p, mr, made["id"]), json={"name": "n", "approvals_required": 0})
        .status_code
        == 403
    )
    assert api(owner).delete(mr_rules_url(p, mr, made["id"])).status_code == 403
    assert listed(api, owner, mr_rules_url(p, mr)) == [("Security", 1)]


def test_own_rules_are_ignored_once_overriding_is_disabled(api, make, db):
    p, owner, dev, _dev2, maint = setup(make)
    create(api, owner, p, name="Security", user_ids=[maint.id])
    mr = make.merge_request(p, dev)
    api(dev).post(mr_rules_url(p, mr), json={"name": "mine", "approvals_required": 0})
    api(owner).post(
        f"/projects/{p.id}/approvals", json={"disable_overriding_approvers_per_merge_request": True}
    )
    state = api(dev).get(state_url(p, mr)).json()
    assert (state["approval_rules_overwritten"], [x["name"] for x in state["rules"]]) == (False, ["Security"])


def test_reporters_may_not_write_merge_request_rules(api, make):
    p, _owner, dev, _dev2, _maint = setup(make)
    reporter = make.user()
    make.member(p, reporter, REPORTER)
    mr = make.merge_request(p, dev)
    assert api(reporter).get(mr_rules_url(p, mr)).status_code == 200
    r = api(reporter).post(mr_rules_url(p, mr), json={"name": "n", "approvals_required": 1})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert listed(api, dev, mr_rules_url(p, mr)) == []


def test_deleting_a_merge_request_rule(api, make, db):
    p, _owner, dev, _dev2, _maint = setup(make)
    mr = make.merge_request(p, dev)
    made = api(dev).post(mr_rules_url(p, mr), json={"name": "n", "approvals_required": 1}).json()
    assert api(dev).get(mr_rules_url(p, mr, made["id"])).json() == made
    assert api(dev).delete(mr_rules_url(p, mr, made["id"])).status_code == 204
    assert api(dev).delete(mr_rules_url(p, mr, made["id"])).status_code == 404
    assert db.scalars(select(ApprovalRule).where(ApprovalRule.merge_request_id == mr.id)).all() == []


def test_a_merge_request_rule_of_another_merge_request_is_not_found(api, make):
    p, _owner, dev, _dev2, _maint = setup(make)
    one, two = make.merge_request(p, dev), make.merge_request(p, dev)
    made = api(dev).post(mr_rules_url(p, one), json={"name": "n", "approvals_required": 1}).json()
    r = api(dev).put(mr_rules_url(p, two, made["id"]), json={"name": "n", "approvals_required": 1})
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


# ----------------------------------------------------------------------------- statements


def test_the_rule_list_costs_the_same_for_one_rule_as_for_many(api, make, runtime, db):
    p, owner, dev, dev2, maint = setup(make)
    g = make.group(owners=[owner], members={dev2: DEVELOPER})
    b = ProtectedBranch(project_id=p.id, name="b")
    db.add(b)
    db.commit()
    create(api, owner, p, name="r0", user_ids=[maint.id], group_ids=[g.id], protected_branch_ids=[b.id])
    mr = make.merge_request(p, dev)

    def project_list():
        return api(dev).get(rules_url(p))

    def mr_list():
        return api(dev).get(mr_rules_url(p, mr))

    before = (count(runtime, project_list), count(runtime, mr_list))
    for i in range(1, 6):
        make.member(g, make.user(), DEVELOPER)
        create(
            api,
            owner,
            p,
            name=f"r{i}",
            user_ids=[maint.id, dev.id],
            group_ids=[g.id],
            protected_branch_ids=[b.id],
        )
    assert (count(runtime, project_list), count(runtime, mr_list)) == before


def test_a_refused_rule_leaves_no_row(api, make, db):
    p, owner, dev, *_ = setup(make)
    create(api, owner, p, name="same", user_ids=[dev.id])
    r = api(owner).post(rules_url(p), json={"name": "same", "approvals_required": 1, "user_ids": [dev.id]})
    assert r.status_code == 400
    db.expire_all()
    assert len(db.scalars(select(ApprovalRule).where(ApprovalRule.project_id == p.id)).all()) == 1


def test_merge_request_rules_take_usernames(api, make):
    p, _owner, dev, dev2, _maint = setup(make)
    mr = make.merge_request(p, dev)
    r = api(dev).post(
        mr_rules_url(p, mr), json={"name": "n", "approvals_required": 1, "usernames": [dev2.username]}
    )
    assert [u["id"] for u in r.json()["users"]] == [dev2.id]
