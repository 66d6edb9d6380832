"""Protected branches: GitLab's Protected Branches API, and what the rules change for
branches, one rule per test."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

from sqlalchemy import select

from kiln.models import ProtectedBranch
from tests.api.test_branches import add_member, branches_url, commit_on
from tests.repositories import new_project


def rules_url(project: dict, name: str | None = None) -> str:
    base = f"/projects/{project['id']}/protected_branches"
    return base if name is None else f"{base}/{name.replace('/', '%2F')}"


def level(rule_id: int, value: int, description: str) -> dict:
    return {
        "id": rule_id,
        "access_level": value,
        "access_level_description": description,
        "deploy_key_id": None,
        "user_id": None,
        "group_id": None,
    }


def patch(api, caller, url: str, **kw):
    return api(caller).request("PATCH", url, **kw)


# ----------------------------------------------------------------------------- reading


def test_new_project_lists_its_protected_default_branch(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(rules_url(p))
    rule_id = r.json()[0]["id"]
    assert (r.status_code, r.json()) == (
        200,
        [
            {
                "id": rule_id,
                "name": "main",
                "push_access_levels": [level(rule_id, 40, "Maintainers")],
                "merge_access_levels": [level(rule_id, 40, "Maintainers")],
                "allow_force_push": False,
                "unprotect_access_levels": [level(rule_id, 40, "Maintainers")],
                "code_owner_approval_required": False,
            }
        ],
    )
    assert r.headers["X-Total"] == "1"


def test_search_filters_by_part_of_the_name(api, make):
    u = make.user()
    p = new_project(api, make, u)
    for name in ("release/*", "stable", "hotfix-Release"):
        api(u).post(rules_url(p), json={"name": name})
    r = api(u).get(rules_url(p), params={"search": "release"})
    assert [x["name"] for x in r.json()] == ["release/*", "hotfix-Release"]


def test_get_a_wildcard_rule_by_its_encoded_name(api, make):
    u = make.user()
    p = new_project(api, make, u)
    created = api(u).post(rules_url(p), json={"name": "release/*"}).json()
    r = api(u).get(f"/projects/{p['id']}/protected_branches/release%2F*")
    assert (r.status_code, r.json()) == (200, created)


def test_get_a_rule_whose_name_has_dots(api, make):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(rules_url(p), json={"name": "my.feature.json"})
    r = api(u).get(rules_url(p, "my.feature.json"))
    assert (r.status_code, r.json()["name"]) == (200, "my.feature.json")


def test_missing_rule_is_404_not_found(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(rules_url(p, "unknown"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_developer_reads_rules(api, make, db):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    r = api(dev).get(rules_url(p, "main"))
    assert (r.status_code, r.json()["name"]) == (200, "main")


def test_guest_of_a_private_project_may_not_read_rules(api, make, db):
    u, guest = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, guest, 10)
    r = api(guest).get(rules_url(p))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_private_project_rules_are_404_to_non_members(api, make):
    u, outsider = make.user(), make.user()
    p = new_project(api, make, u)
    r = api(outsider).get(rules_url(p))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


# ----------------------------------------------------------------------------- protecting


def test_protect_defaults_to_maintainers(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(rules_url(p), json={"name": "stable"})
    rule_id = r.json()["id"]
    assert (r.status_code, r.json()) == (
        201,
        {
            "id": rule_id,
            "name": "stable",
            "push_access_levels": [level(rule_id, 40, "Maintainers")],
            "merge_access_levels": [level(rule_id, 40, "Maintainers")],
            "allow_force_push": False,
            "unprotect_access_levels": [level(rule_id, 40, "Maintainers")],
            "code_owner_approval_required": False,
        },
    )


def test_protect_with_levels_and_force_push(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(
        rules_url(p),
        data={
            "name": "dev/*",
            "push_access_level": "30",
            "merge_access_level": "0",
            "unprotect_access_level": "60",
            "allow_force_push": "true",
            "code_owner_approval_required": "true",
        },
    )
    body = r.json()
    rule_id = body["id"]
    assert r.status_code == 201
    assert (body["push_access_levels"], body["merge_access_levels"], body["unprotect_access_levels"]) == (
        [level(rule_id, 30, "Developers + Maintainers")],
        [level(rule_id, 0, "No one")],
        [level(rule_id, 60, "Instance admins")],
    )
    assert (body["allow_force_push"], body["code_owner_approval_required"]) == (True, True)


def test_protect_takes_a_role_from_allowed_to_entries(api, make):
    u, other = make.user(), make.user()
    p = new_project(api, make, u)
    r = api(u).post(
        rules_url(p),
        json={"name": "x", "allowed_to_push": [{"user_id": other.id}, {"access_level": 30}]},
    )
    assert (r.status_code, r.json()["push_access_levels"][0]["access_level"]) == (201, 30)


def test_protect_an_already_protected_name_is_409(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(rules_url(p), json={"name": "main"})
    assert (r.status_code, r.json()) == (409, {"message": "Protected branch 'main' already exists"})


def test_protect_without_a_name_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(rules_url(p), json={"push_access_level": 30})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing"})


def test_protect_with_an_unknown_level_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(rules_url(p), json={"name": "x", "push_access_level": 20})
    assert (r.status_code, r.json()) == (400, {"error": "push_access_level does not have a valid value"})
    r = api(u).post(rules_url(p), json={"name": "x", "unprotect_access_level": 0})
    assert (r.status_code, r.json()) == (400, {"error": "unprotect_access_level does not have a valid value"})


def test_developer_may_not_protect(api, make, db):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    r = api(dev).post(rules_url(p), json={"name": "x"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_protecting_a_branch_takes_push_away_from_developers(api, make, db, settings):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    commit_on(settings, p, "topic", "t.txt")
    assert api(dev).get(branches_url(p, "topic")).json()["can_push"] is True
    api(u).post(rules_url(p), json={"name": "top*"})
    view = api(dev).get(branches_url(p, "topic")).json()
    assert (view["protected"], view["can_push"]) == (True, False)


# ----------------------------------------------------------------------------- updating


def test_update_allows_force_push(api, make, db):
    u = make.user()
    p = new_project(api, make, u)
    r = patch(api, u, rules_url(p, "main"), json={"allow_force_push": True})
    assert (r.status_code, r.json()["allow_force_push"]) == (200, True)
    db.expire_all()
    rule = db.scalars(select(ProtectedBranch).where(ProtectedBranch.project_id == p["id"])).one()
    assert rule.allow_force_push is True


def test_update_changes_levels(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = patch(api, u, rules_url(p, "main"), json={"allowed_to_merge": [{"access_level": 30}]})
    body = r.json()
    assert (r.status_code, body["merge_access_levels"][0]["access_level"]) == (200, 30)
    assert body["push_access_levels"][0]["access_level"] == 40


def test_update_a_missing_rule_is_404(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = patch(api, u, rules_url(p, "nope"), json={"allow_force_push": True})
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_developer_may_not_update(api, make, db):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    r = patch(api, dev, rules_url(p, "main"), json={"allow_force_push": True})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


# ----------------------------------------------------------------------------- unprotecting


def test_unprotect_answers_204_and_frees_the_branch(api, make, db, settings):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    r = api(u).delete(rules_url(p, "main"))
    assert (r.status_code, r.content) == (204, b"")
    assert api(u).get(rules_url(p)).json() == []
    view = api(dev).get(branches_url(p, "main")).json()
    assert (view["protected"], view["can_push"]) == (False, True)


def test_unprotect_a_wildcard_rule(api, make):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(rules_url(p), json={"name": "feature*"})
    r = api(u).delete(rules_url(p, "feature*"))
    assert (r.status_code, [x["name"] for x in api(u).get(rules_url(p)).json()]) == (204, ["main"])


def test_unprotect_a_missing_rule_is_404(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).delete(rules_url(p, "barfoo"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_developer_may_not_unprotect(api, make, db):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    r = api(dev).delete(rules_url(p, "main"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_unprotect_level_60_leaves_the_rule_to_administrators(api, make):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(rules_url(p), json={"name": "locked", "unprotect_access_level": 60})
    r = api(u).delete(rules_url(p, "locked"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert api("root").delete(rules_url(p, "locked")).status_code == 204


def test_unprotect_refuses_a_rule_changed_after_if_unmodified_since(api, make):
    u = make.user()
    p = new_project(api, make, u)
    since = format_datetime(datetime(2020, 1, 1, tzinfo=UTC), usegmt=True)
    r = api(u).delete(rules_url(p, "main"), headers={"If-Unmodified-Since": since})
    assert (r.status_code, r.json()) == (412, {"message": "412 Precondition Failed"})


def test_archived_project_refuses_rule_changes(api, make):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(f"/projects/{p['id']}/archive")
    r = api(u).post(rules_url(p), json={"name": "x"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
