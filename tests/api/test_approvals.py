"""Merge request approvals: a project's approval configuration, a merge request's approval status
and state, approve and unapprove with every refusal GitLab makes, the deprecated approvers
endpoints, and the interfaces other parts of kiln use (approvals_left, reset_on_push)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from kiln.models import Approval, Email, Event, MergeRequestReviewer, ProtectedBranch
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.policy import ProjectSubject
from kiln.services import approvals as service
from tests.statements import count


def cfg_url(p) -> str:
    return f"/projects/{p.id}/approvals"


def mr_url(p, mr, tail: str = "approvals") -> str:
    return f"/projects/{p.id}/merge_requests/{mr.iid}/{tail}"


def setup(make, **project_fields):
    """A project with a repository, an owner, two Developers and a Maintainer, and an open
    merge request by the first Developer."""
    owner = make.user()
    dev, dev2, maint = make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=owner, **project_fields)
    for u, level in ((dev, DEVELOPER), (dev2, DEVELOPER), (maint, MAINTAINER)):
        make.member(p, u, level)
    mr = make.merge_request(p, dev)
    return p, mr, owner, dev, dev2, maint


def rule(api, who, p, **body):
    body.setdefault("approvals_required", 1)
    body.setdefault("name", "rule")
    r = api(who).post(f"/projects/{p.id}/approval_rules", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def events_of(db, mr) -> list[str]:
    db.expire_all()
    return [
        e.data["hook_action"]
        for e in db.scalars(
            select(Event).where(Event.target_type == "MergeRequest", Event.target_id == mr.id)
        )
        if e.data.get("hook") == "merge_request"
    ]


def approvers(db, mr) -> list[int]:
    """Who approved `mr`, in the order the approvals were written."""
    db.expire_all()
    return list(
        db.scalars(select(Approval.user_id).where(Approval.merge_request_id == mr.id).order_by(Approval.id))
    )


# ----------------------------------------------------------------------------- configuration


def test_configuration_shows_the_settings_as_the_spec_names_them(api, make):
    p, _, _owner, dev, *_ = setup(make)
    r = api(dev).get(cfg_url(p))
    assert (r.status_code, r.json()) == (
        200,
        {
            "approvers": [],
            "approver_groups": [],
            "approvals_before_merge": 0,
            "reset_approvals_on_push": True,
            "disable_overriding_approvers_per_merge_request": False,
            "merge_requests_author_approval": False,
            "merge_requests_disable_committers_approval": False,
            "require_password_to_approve": False,
        },
    )


def test_maintainers_change_the_configuration(api, make):
    p, _, _owner, dev, _dev2, maint = setup(make)
    body = {
        "approvals_before_merge": 2,
        "reset_approvals_on_push": False,
        "disable_overriding_approvers_per_merge_request": True,
        "merge_requests_author_approval": True,
        "merge_requests_disable_committers_approval": True,
        "require_password_to_approve": True,
    }
    r = api(maint).post(cfg_url(p), json=body)
    assert r.status_code == 201
    assert {k: r.json()[k] for k in body} == body
    assert api(dev).get(cfg_url(p)).json()["approvals_before_merge"] == 2


def test_developers_may_not_change_the_configuration(api, make):
    p, _, _owner, dev, *_ = setup(make)
    r = api(dev).post(cfg_url(p), json={"approvals_before_merge": 2})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert api(dev).get(cfg_url(p)).json()["approvals_before_merge"] == 0


def test_a_negative_approvals_before_merge_is_refused(api, make):
    p, _, owner, *_ = setup(make)
    r = api(owner).post(cfg_url(p), json={"approvals_before_merge": -1})
    assert r.status_code == 400
    assert api(owner).get(cfg_url(p)).json()["approvals_before_merge"] == 0


def test_outsiders_do_not_see_a_private_projects_configuration(api, make):
    p, *_ = setup(make)
    r = api(make.user()).get(cfg_url(p))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_the_instance_setting_shows_in_the_configuration(api, make):
    p, _, owner, *_ = setup(make)
    api("root").put(
        "/application/settings",
        json={
            "prevent_merge_requests_author_approval": True,
            "prevent_merge_requests_committers_approval": True,
        },
    )
    body = api(owner).get(cfg_url(p)).json()
    assert body["merge_requests_author_approval"] is True
    assert body["merge_requests_disable_committers_approval"] is True


def test_deprecated_project_approvers_keep_one_regular_rule(api, make):
    p, _, owner, _dev, dev2, maint = setup(make)
    g = make.group(members={dev2: DEVELOPER})
    make.member(g, owner, MAINTAINER)
    r = api(owner).put(
        f"/projects/{p.id}/approvers", json={"approver_ids": [maint.id], "approver_group_ids": [g.id]}
    )
    assert r.status_code == 200, r.text
    assert [a["user"]["id"] for a in r.json()["approvers"]] == [maint.id]
    assert [a["group"]["id"] for a in r.json()["approver_groups"]] == [g.id]
    rules = api(owner).get(f"/projects/{p.id}/approval_rules").json()
    assert [(x["name"], x["rule_type"]) for x in rules] == [("Default", "regular")]
    assert sorted(u["id"] for u in rules[0]["eligible_approvers"]) == sorted([maint.id, dev2.id, owner.id])
    # Omitted ones are removed; none at all removes the rule.
    r = api(owner).put(f"/projects/{p.id}/approvers", json={"approver_ids": [], "approver_group_ids": []})
    assert (r.json()["approvers"], r.json()["approver_groups"]) == ([], [])
    assert api(owner).get(f"/projects/{p.id}/approval_rules").json() == []


def test_deprecated_project_approvers_are_required(api, make):
    p, _, owner, *_ = setup(make)
    r = api(owner).put(f"/projects/{p.id}/approvers", json={"approver_ids": []})
    assert (r.status_code, r.json()) == (400, {"error": "approver_group_ids is missing"})


# ----------------------------------------------------------------------------- status


def test_status_of_a_merge_request_without_rules(api, make):
    p, mr, _owner, _dev, dev2, _maint = setup(make)
    r = api(dev2).get(mr_url(p, mr))
    body = r.json()
    assert r.status_code == 200
    assert {k: body[k] for k in ("id", "iid", "project_id", "title", "state", "merge_status")} == {
        "id": mr.id,
        "iid": mr.iid,
        "project_id": p.id,
        "title": mr.title,
        "state": "opened",
        "merge_status": mr.merge_status,
    }
    assert {
        k: body[k]
        for k in (
            "approved",
            "approvals_required",
            "approvals_left",
            "approved_by",
            "suggested_approvers",
            "approvers",
            "approver_groups",
            "user_has_approved",
            "user_can_approve",
            "has_approval_rules",
            "require_password_to_approve",
            "multiple_approval_rules_available",
            "merge_request_approvers_available",
        )
    } == {
        "approved": True,
        "approvals_required": 0,
        "approvals_left": 0,
        "approved_by": [],
        "suggested_approvers": [],
        "approvers": [],
        "approver_groups": [],
        "user_has_approved": False,
        "user_can_approve": True,
        "has_approval_rules": False,
        "require_password_to_approve": False,
        "multiple_approval_rules_available": True,
        "merge_request_approvers_available": True,
    }


def test_fallback_counts_the_projects_approvals_before_merge(api, make, db):
    p, mr, _owner, _dev, dev2, maint = setup(make, approvals_before_merge=2)
    assert api(dev2).get(mr_url(p, mr)).json()["approvals_left"] == 2
    api(dev2).post(mr_url(p, mr, "approve"))
    body = api(maint).post(mr_url(p, mr, "approve")).json()
    assert (body["approvals_left"], body["approved"]) == (0, True)
    assert service.approvals_left(db, None, mr) == 0


def test_approve_answers_the_status_and_records_events(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make, approvals_before_merge=1)
    r = api(dev2).post(mr_url(p, mr, "approve"))
    assert r.status_code == 201, r.text
    body = r.json()
    assert [a["user"]["username"] for a in body["approved_by"]] == [dev2.username]
    assert (body["approved"], body["user_has_approved"], body["user_can_approve"]) == (True, True, False)
    assert events_of(db, mr) == ["approval", "approved"]
    r = api(dev2).post(mr_url(p, mr, "unapprove"))
    assert r.status_code == 201
    assert (r.json()["approved_by"], r.json()["approved"]) == ([], False)
    assert events_of(db, mr) == ["approval", "approved", "unapproval", "unapproved"]


def test_an_approval_that_does_not_complete_sends_no_approved(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make, approvals_before_merge=2)
    api(dev2).post(mr_url(p, mr, "approve"))
    assert events_of(db, mr) == ["approval"]


def test_approving_twice_is_unauthorized(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make)
    assert api(dev2).post(mr_url(p, mr, "approve")).status_code == 201
    r = api(dev2).post(mr_url(p, mr, "approve"))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})
    assert approvers(db, mr) == [dev2.id]


def test_unapprove_without_an_approval_is_not_found(api, make):
    p, mr, _owner, _dev, dev2, _maint = setup(make)
    r = api(dev2).post(mr_url(p, mr, "unapprove"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


def test_a_sha_other_than_the_head_is_a_conflict(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make)
    r = api(dev2).post(mr_url(p, mr, "approve"), json={"sha": "0" * 40})
    assert (r.status_code, r.json()) == (
        409,
        {"message": f"SHA does not match HEAD of source branch: {mr.head_sha}"},
    )
    assert approvers(db, mr) == []
    assert api(dev2).post(mr_url(p, mr, "approve"), json={"sha": mr.head_sha}).status_code == 201


def test_the_author_approves_unless_the_project_refuses(api, make, db):
    p, mr, _owner, dev, *_ = setup(make)
    assert api(dev).get(mr_url(p, mr)).json()["user_can_approve"] is True
    assert api(dev).post(mr_url(p, mr, "approve")).status_code == 201
    assert approvers(db, mr) == [dev.id]


def test_merge_requests_author_approval_true_refuses_the_author(api, make, db):
    p, mr, _owner, dev, *_ = setup(make, merge_requests_author_approval=True)
    assert api(dev).get(mr_url(p, mr)).json()["user_can_approve"] is False
    r = api(dev).post(mr_url(p, mr, "approve"))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})
    assert approvers(db, mr) == []


def test_the_instance_setting_refuses_the_author(api, make, db):
    p, mr, _owner, dev, *_ = setup(make)
    r = api("root").put("/application/settings", json={"prevent_merge_requests_author_approval": True})
    assert r.status_code == 200, r.text
    r = api(dev).post(mr_url(p, mr, "approve"))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})
    assert approvers(db, mr) == []


def _committed(make, p, who, author_email):
    """A merge request by `who` from a branch with a commit whose author is `author_email`."""
    branch = f"work-{who.username}"
    make.branch(p, branch, make.commit(p, {"base.txt": "x\n"}))
    make.commit(p, {"c.txt": "c\n"}, branch=branch, author=(who.username, author_email))
    return make.merge_request(p, who, source_branch=branch)


def test_committers_approve_unless_the_project_refuses(api, make, db):
    p, _mr, _owner, dev, dev2, _maint = setup(make)
    mine = _committed(make, p, dev, dev2.email)
    assert api(dev2).post(mr_url(p, mine, "approve")).status_code == 201
    assert approvers(db, mine) == [dev2.id]


def test_committers_are_refused_when_the_project_disables_their_approval(api, make, db):
    p, _mr, _owner, dev, dev2, maint = setup(make, merge_requests_disable_committers_approval=True)
    mine = _committed(make, p, dev, dev2.email.upper())
    r = api(dev2).post(mr_url(p, mine, "approve"))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})
    assert approvers(db, mine) == []
    assert api(maint).post(mr_url(p, mine, "approve")).status_code == 201
    assert approvers(db, mine) == [maint.id]


def test_a_committers_further_confirmed_address_counts(api, make, db):
    p, _mr, _owner, dev, dev2, _maint = setup(make)
    db.add(Email(user_id=dev2.id, email="other@elsewhere.test", confirmed_at=datetime.now(UTC)))
    db.commit()
    mine = _committed(make, p, dev, "other@elsewhere.test")
    r = api("root").put("/application/settings", json={"prevent_merge_requests_committers_approval": True})
    assert r.status_code == 200, r.text
    assert api(dev2).post(mr_url(p, mine, "approve")).status_code == 401
    assert approvers(db, mine) == []


def test_password_is_checked_where_the_project_asks(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make, require_password_to_approve=True)
    r = api(dev2).post(mr_url(p, mr, "approve"), json={"approval_password": "wrong"})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})
    assert api(dev2).post(mr_url(p, mr, "approve")).status_code == 401
    assert approvers(db, mr) == []
    r = api(dev2).post(mr_url(p, mr, "approve"), json={"approval_password": dev2.password})
    assert r.status_code == 201
    assert r.json()["require_password_to_approve"] is True


def test_approvals_by_role(api, make, db):
    p, mr, owner, _dev, _dev2, maint = setup(make, visibility="public")
    reporter, guest, outsider = make.user(), make.user(), make.user()
    make.member(p, reporter, REPORTER)
    make.member(p, guest, GUEST)
    # Reporters and Guests may not update the merge request, so not approve it.
    assert api(reporter).post(mr_url(p, mr, "approve")).status_code == 403
    assert api(guest).post(mr_url(p, mr, "approve")).status_code == 403
    assert api(outsider).post(mr_url(p, mr, "approve")).status_code == 403
    assert api(outsider).get(mr_url(p, mr)).json()["user_can_approve"] is False
    assert approvers(db, mr) == []
    assert api(maint).post(mr_url(p, mr, "approve")).status_code == 201
    assert api(owner).post(mr_url(p, mr, "approve")).status_code == 201
    assert api("root").post(mr_url(p, mr, "approve")).status_code == 201
    assert approvers(db, mr) == [maint.id, owner.id, api("root").get("/user").json()["id"]]


def test_anonymous_callers_are_unauthorized(api, make):
    p, mr, *_ = setup(make, visibility="public")
    assert api(None).get(mr_url(p, mr)).status_code == 401


def test_a_missing_merge_request_is_not_found(api, make):
    p, _mr, owner, *_ = setup(make)
    r = api(owner).get(f"/projects/{p.id}/merge_requests/999/approvals")
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Request Not Found"})


def test_a_reviewer_who_approves_is_shown_approved(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make)
    db.add(MergeRequestReviewer(merge_request_id=mr.id, user_id=dev2.id))
    db.commit()
    api(dev2).post(mr_url(p, mr, "approve"))
    db.expire_all()
    assert db.scalars(
        select(MergeRequestReviewer.state).where(MergeRequestReviewer.user_id == dev2.id)
    ).one() == ("approved")


# ----------------------------------------------------------------------------- rules and the count


def test_a_rule_names_who_may_approve_while_it_waits(api, make, db):
    p, mr, owner, _dev, dev2, maint = setup(make)
    rule(api, owner, p, name="Security", approvals_required=1, user_ids=[maint.id])
    body = api(dev2).get(mr_url(p, mr)).json()
    assert (body["approvals_required"], body["approvals_left"], body["has_approval_rules"]) == (1, 1, True)
    assert [a["user"]["id"] for a in body["approvers"]] == [maint.id]
    assert [u["id"] for u in body["suggested_approvers"]] == [maint.id]
    assert body["approval_rules_left"][0]["name"] == "Security"
    assert body["user_can_approve"] is False
    assert api(dev2).post(mr_url(p, mr, "approve")).status_code == 401
    assert approvers(db, mr) == []
    body = api(maint).post(mr_url(p, mr, "approve")).json()
    assert (body["approvals_left"], body["approved"]) == (0, True)
    # Once the rules are met, anyone who may approve adds an approval.
    assert api(dev2).post(mr_url(p, mr, "approve")).status_code == 201


def test_approvals_left_adds_up_several_rules_and_any_approver(api, make, db):
    p, mr, owner, _dev, dev2, maint = setup(make)
    extra = make.user()
    make.member(p, extra, DEVELOPER)
    rule(api, owner, p, name="Any", approvals_required=3, rule_type="any_approver")
    rule(api, owner, p, name="Maintainers", approvals_required=1, user_ids=[maint.id, owner.id])
    rule(api, owner, p, name="Pair", approvals_required=2, user_ids=[dev2.id, extra.id, owner.id])
    state = api(dev2).get(mr_url(p, mr)).json()
    assert (state["approvals_required"], state["approvals_left"]) == (6, 6)
    api(dev2).post(mr_url(p, mr, "approve"))
    # dev2 counts for Any and Pair.
    assert api(dev2).get(mr_url(p, mr)).json()["approvals_left"] == 4
    assert service.approvals_left(db, None, mr) == 4
    api(owner).post(mr_url(p, mr, "approve"))
    # owner counts for all three: Any 1 left, Maintainers met, Pair met.
    body = api(dev2).get(mr_url(p, mr)).json()
    assert (body["approvals_left"], body["approved"]) == (1, False)
    assert service.is_approved(db, None, mr) is False
    api(maint).post(mr_url(p, mr, "approve"))
    assert service.approvals_left(db, None, mr) == 0
    assert service.is_approved(db, None, mr) is True
    # As the merge and merge request services call it: with the project, or its subject.
    assert service.approvals_left(db, p, mr) == 0
    assert service.approvals_left(db, ProjectSubject(project=p, namespace=None, level=None), mr) == 0


def test_the_author_does_not_count_for_a_rule_where_refused(api, make):
    p, mr, owner, dev, dev2, _maint = setup(make, merge_requests_author_approval=True)
    rule(api, owner, p, name="r", approvals_required=1, user_ids=[dev.id, dev2.id])
    body = api(owner).get(mr_url(p, mr, "approval_state")).json()
    assert [u["id"] for u in body["rules"][0]["eligible_approvers"]] == [dev2.id]


def test_rules_apply_by_protected_branch(api, make, db):
    p, mr, owner, dev, _dev2, _maint = setup(make)
    stable = ProtectedBranch(project_id=p.id, name="stable-*")
    db.add(stable)
    db.commit()
    rule(api, owner, p, name="Stable", approvals_required=2, protected_branch_ids=[stable.id])
    rule(api, owner, p, name="All", approvals_required=1)
    tip = make.commit(p, {"s.txt": "s\n"}, branch="stable-1")
    assert tip
    into_stable = make.merge_request(p, dev, target_branch="stable-1")
    assert [r["name"] for r in api(dev).get(mr_url(p, into_stable, "approval_state")).json()["rules"]] == [
        "Stable",
        "All",
    ]
    assert [r["name"] for r in api(dev).get(mr_url(p, mr, "approval_state")).json()["rules"]] == ["All"]


def test_a_rule_for_all_protected_branches(api, make):
    p, mr, owner, dev, _dev2, _maint = setup(make)
    rule(api, owner, p, name="Protected", approvals_required=1, applies_to_all_protected_branches=True)
    make.commit(p, {"x.txt": "x\n"}, branch="loose")
    loose = make.merge_request(p, dev, target_branch="loose")
    # The default branch is protected; `loose` is not.
    assert [r["name"] for r in api(dev).get(mr_url(p, mr, "approval_state")).json()["rules"]] == ["Protected"]
    assert api(dev).get(mr_url(p, loose, "approval_state")).json()["rules"] == []


def test_approval_state_shows_each_rule_with_its_approvals(api, make):
    p, mr, owner, dev, _dev2, maint = setup(make)
    made = rule(api, owner, p, name="Security", approvals_required=1, user_ids=[maint.id])
    api(maint).post(mr_url(p, mr, "approve"))
    body = api(dev).get(mr_url(p, mr, "approval_state")).json()
    assert body["approval_rules_overwritten"] is False
    (r,) = body["rules"]
    assert {k: r[k] for k in ("id", "name", "rule_type", "approvals_required", "approved", "overridden")} == {
        "id": made["id"],
        "name": "Security",
        "rule_type": "regular",
        "approvals_required": 1,
        "approved": True,
        "overridden": False,
    }
    assert [u["id"] for u in r["approved_by"]] == [maint.id]
    assert [u["id"] for u in r["eligible_approvers"]] == [maint.id]
    assert r["source_rule"] == {"approvals_required": 1}
    assert set(r) >= {"users", "groups", "contains_hidden_groups"}


# ----------------------------------------------------------------------------- deprecated MR endpoints


def test_post_approvals_sets_the_merge_requests_count(api, make):
    p, mr, _owner, dev, _dev2, _maint = setup(make)
    r = api(dev).post(mr_url(p, mr), json={"approvals_required": 2})
    assert r.status_code == 201, r.text
    assert (r.json()["approvals_required"], r.json()["approvals_left"]) == (2, 2)


def test_post_approvals_below_the_project_is_refused(api, make):
    p, mr, _owner, dev, _dev2, _maint = setup(make, approvals_before_merge=2)
    assert api(dev).post(mr_url(p, mr), json={"approvals_required": 1}).status_code == 400


def test_post_approvals_is_refused_when_overriding_is_disabled(api, make):
    p, mr, _owner, dev, _dev2, _maint = setup(make, disable_overriding_approvers_per_merge_request=True)
    r = api(dev).post(mr_url(p, mr), json={"approvals_required": 2})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api(dev).put(mr_url(p, mr, "approvers"), json={"approver_ids": [], "approver_group_ids": []})
    assert r.status_code == 403


def test_post_approvals_requires_the_count(api, make):
    p, mr, _owner, dev, *_ = setup(make)
    r = api(dev).post(mr_url(p, mr), json={})
    assert (r.status_code, r.json()) == (400, {"error": "approvals_required is missing"})


def test_merge_request_approvers_make_its_own_rule(api, make):
    p, mr, _owner, dev, _dev2, maint = setup(make)
    r = api(dev).put(mr_url(p, mr, "approvers"), json={"approver_ids": [maint.id], "approver_group_ids": []})
    assert r.status_code == 200, r.text
    assert [a["user"]["id"] for a in r.json()["approvers"]] == [maint.id]
    state = api(dev).get(mr_url(p, mr, "approval_state")).json()
    assert state["approval_rules_overwritten"] is True
    assert [x["name"] for x in state["rules"]] == ["Default"]


# ----------------------------------------------------------------------------- for other parts


def test_reset_on_push_removes_approvals_where_the_project_says(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make)
    api(dev2).post(mr_url(p, mr, "approve"))
    db.expire_all()
    assert service.reset_on_push(db, None, mr) == 1
    db.commit()
    assert db.scalars(select(Approval).where(Approval.merge_request_id == mr.id)).all() == []


def test_reset_on_push_keeps_approvals_when_the_project_says_so(api, make, db):
    p, mr, _owner, _dev, dev2, _maint = setup(make, reset_approvals_on_push=False)
    api(dev2).post(mr_url(p, mr, "approve"))
    db.expire_all()
    assert service.reset_on_push(db, None, mr) == 0
    db.commit()
    assert len(db.scalars(select(Approval).where(Approval.merge_request_id == mr.id)).all()) == 1


# ----------------------------------------------------------------------------- statements


def test_status_and_state_cost_the_same_for_one_rule_as_for_many(api, make, runtime):
    p, mr, owner, dev, dev2, maint = setup(make, merge_requests_disable_committers_approval=True)
    g = make.group(members={dev2: DEVELOPER})
    rule(api, owner, p, name="r0", approvals_required=1, user_ids=[maint.id], group_ids=[])
    api(maint).post(mr_url(p, mr, "approve"))

    def status():
        return api(dev).get(mr_url(p, mr))

    def state():
        return api(dev).get(mr_url(p, mr, "approval_state"))

    before = (count(runtime, status), count(runtime, state))
    for i in range(1, 6):
        make.member(g, make.user(), DEVELOPER)
        rule(
            api, owner, p, name=f"r{i}", approvals_required=1, user_ids=[maint.id, owner.id], group_ids=[g.id]
        )
    api(owner).post(mr_url(p, mr, "approve"))
    assert (count(runtime, status), count(runtime, state)) == before


def test_configuration_costs_the_same_whatever_the_approvers(api, make, runtime):
    p, _mr, owner, dev, dev2, maint = setup(make)
    api(owner).put(f"/projects/{p.id}/approvers", json={"approver_ids": [maint.id], "approver_group_ids": []})

    def call():
        return api(dev).get(cfg_url(p))

    before = count(runtime, call)
    g = make.group(members={dev2: DEVELOPER})
    api(owner).put(
        f"/projects/{p.id}/approvers",
        json={"approver_ids": [maint.id, dev2.id, owner.id], "approver_group_ids": [g.id]},
    )
    assert count(runtime, call) == before


def test_a_refused_approval_leaves_no_row_and_no_event(api, make, db):
    p, mr, _owner, dev, *_ = setup(make, merge_requests_author_approval=True)
    assert api(dev).post(mr_url(p, mr, "approve")).status_code == 401
    db.expire_all()
    assert db.scalars(select(Approval).where(Approval.merge_request_id == mr.id)).all() == []
    assert events_of(db, mr) == []


def test_reporters_may_not_unapprove(api, make):
    p, mr, *_ = setup(make)
    reporter = make.user()
    make.member(p, reporter, REPORTER)
    r = api(reporter).post(mr_url(p, mr, "unapprove"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
