"""Every project and group endpoint, called as each kind of caller against private,
internal and public subjects. The expected answers come from the rules written here
(GitLab's permission model), not from kiln's policy module, so that a policy change which
leaks or over-restricts anything fails a case."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

ROLES = ("anonymous", "non_member", "guest", "reporter", "developer", "maintainer", "owner", "admin")
LEVEL = {"guest": 10, "reporter": 20, "developer": 30, "maintainer": 40, "owner": 50}
VISIBILITIES = ("private", "internal", "public")


@dataclass(frozen=True)
class Rule:
    """What an endpoint needs: `read` (visible is enough), a member level, or admin."""

    method: str
    path: str
    ok: int
    needs: str | int = "read"  # "read" | "read_code" | "signed_in" | "admin" | access level
    body: dict[str, Any] | None = None
    anonymous_allowed: bool = False
    refusal: int = 403  # what a visible caller without the right gets


def expected(rule: Rule, role: str, visibility: str) -> int:
    level = LEVEL.get(role, 0)
    admin = role == "admin"
    if role == "anonymous" and not rule.anonymous_allowed:
        return 401
    if rule.needs == "admin":
        return rule.ok if admin else 403
    member = admin or level >= 10
    visible = member or visibility == "public" or (visibility == "internal" and role != "anonymous")
    if not visible:
        return 404 if rule.refusal != 400 else 400
    if rule.needs in ("read", "signed_in"):
        return rule.ok
    if rule.needs == "read_code":
        # Guests of a private project see no code; everyone who sees a public or internal one does.
        return rule.ok if (admin or level >= 20 or visibility != "private") else 404
    assert isinstance(rule.needs, int)
    return rule.ok if (admin or level >= rule.needs) else rule.refusal


PROJECT_RULES = {
    "get project": Rule("GET", "/projects/{id}", 200, anonymous_allowed=True),
    "head project": Rule("HEAD", "/projects/{id}", 200, anonymous_allowed=True),
    "starrers": Rule("GET", "/projects/{id}/starrers", 200, anonymous_allowed=True),
    "forks": Rule("GET", "/projects/{id}/forks", 200, anonymous_allowed=True),
    "languages": Rule("GET", "/projects/{id}/languages", 200, needs="read_code", anonymous_allowed=True),
    "members": Rule("GET", "/projects/{id}/members", 200),
    "all members": Rule("GET", "/projects/{id}/members/all", 200),
    "update": Rule("PUT", "/projects/{id}", 200, needs=40, body={"description": "changed"}),
    "change visibility": Rule(
        "PUT", "/projects/{id}", 200, needs=50, body={"visibility": "{other_visibility}"}
    ),
    "archive": Rule("POST", "/projects/{id}/archive", 201, needs=50),
    "unarchive": Rule("POST", "/projects/{id}/unarchive", 201, needs=50),
    "delete": Rule("DELETE", "/projects/{id}", 202, needs=50),
    "star": Rule("POST", "/projects/{id}/star", 201, needs="signed_in"),
    "fork": Rule("POST", "/projects/{id}/fork", 201, needs="read_code"),
    "upload": Rule("POST", "/projects/{id}/uploads", 201, needs="signed_in"),
    "share": Rule(
        "POST", "/projects/{id}/share", 201, needs=40, body={"group_id": "{share_group}", "group_access": 10}
    ),
    "add member": Rule(
        "POST", "/projects/{id}/members", 201, needs=40, body={"user_id": "{bystander}", "access_level": 10}
    ),
    "custom attribute": Rule(
        "PUT", "/projects/{id}/custom_attributes/k", 200, needs="admin", body={"value": "v"}
    ),
}

GROUP_RULES = {
    "get group": Rule("GET", "/groups/{id}", 200, anonymous_allowed=True),
    "subgroups": Rule("GET", "/groups/{id}/subgroups", 200, anonymous_allowed=True),
    "group projects": Rule("GET", "/groups/{id}/projects", 200, anonymous_allowed=True),
    "group members": Rule("GET", "/groups/{id}/members", 200),
    "update group": Rule("PUT", "/groups/{id}", 200, needs=50, body={"description": "changed"}),
    "delete group": Rule("DELETE", "/groups/{id}", 202, needs=50),
    "create subgroup": Rule(
        "POST",
        "/groups",
        201,
        needs=40,
        body={"name": "sub", "path": "sub", "parent_id": "{id}", "visibility": "private"},
    ),
    "create project in group": Rule(
        "POST", "/projects", 201, needs=30, body={"name": "inside", "namespace_id": "{id}"}, refusal=400
    ),
    "add group member": Rule(
        "POST", "/groups/{id}/members", 201, needs=50, body={"user_id": "{bystander}", "access_level": 10}
    ),
    "group custom attribute": Rule(
        "PUT", "/groups/{id}/custom_attributes/k", 200, needs="admin", body={"value": "v"}
    ),
}


def _caller(api: Any, make: Any, role: str) -> tuple[Any, Any]:
    if role == "anonymous":
        return api(), None
    if role == "admin":
        return api("root"), None
    user = make.user()
    return api(user), user


def _fill(value: Any, names: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return names[value[1:-1]]
    if isinstance(value, str):
        return value.format(**names)
    return value


def _call(client: Any, rule: Rule, names: dict[str, Any]) -> Any:
    path = rule.path.format(**names)
    kw: dict[str, Any] = {}
    if rule.path.endswith("/uploads"):
        kw["files"] = {"file": ("a.txt", b"hello")}
    elif rule.body is not None:
        kw["json"] = {k: _fill(v, names) for k, v in rule.body.items()}
    return client.request(rule.method, path, **kw)


@pytest.mark.parametrize("visibility", VISIBILITIES)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", list(PROJECT_RULES))
def test_project_endpoint(api, make, endpoint, role, visibility):
    rule = PROJECT_RULES[endpoint]
    # The project sits in a public group owned by nobody in the test, so forks by any caller
    # land in their own namespace and no group membership leaks into the project.
    home = make.group(visibility="public")
    client, user = _caller(api, make, role)
    members = {user: LEVEL[role]} if role in LEVEL else {}
    project = make.project(namespace=home, visibility=visibility, members=members)
    names = {
        "id": project.id,
        "share_group": make.group(visibility="public").id,
        "bystander": make.user().id,
        "other_visibility": "private" if visibility != "private" else "internal",
    }
    r = _call(client, rule, names)
    want = expected(rule, role, visibility)
    assert r.status_code == want, (endpoint, role, visibility, r.status_code, r.text[:200])


@pytest.mark.parametrize("visibility", VISIBILITIES)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", list(GROUP_RULES))
def test_group_endpoint(api, make, endpoint, role, visibility):
    rule = GROUP_RULES[endpoint]
    client, user = _caller(api, make, role)
    members = {user: LEVEL[role]} if role in LEVEL else {}
    group = make.group(visibility=visibility, members=members)
    names = {"id": group.id, "bystander": make.user().id}
    r = _call(client, rule, names)
    want = expected(rule, role, visibility)
    assert r.status_code == want, (endpoint, role, visibility, r.status_code, r.text[:200])


# ----------------------------------------------------------------------------- issues
# An issue of a project whose issues are open to all who see it: plain issues are read by
# whoever sees the project; confidential ones only by Reporters and up, administrators, and
# (below) their author. Lists hold exactly the issues a caller may read.


def _issue_readable(role: str, visibility: str, confidential: bool) -> bool:
    level = LEVEL.get(role, 0)
    admin = role == "admin"
    visible = (
        admin or level >= 10 or visibility == "public" or (visibility == "internal" and role != "anonymous")
    )
    if not visible:
        return False
    return not confidential or admin or level >= 20


@pytest.mark.parametrize("confidential", [False, True], ids=["plain", "confidential"])
@pytest.mark.parametrize("visibility", VISIBILITIES)
@pytest.mark.parametrize("role", ROLES)
def test_issue_read(api, make, role, visibility, confidential):
    client, user = _caller(api, make, role)
    owner = make.user()
    members = {user: LEVEL[role]} if role in LEVEL else {}
    project = make.project(owner=owner, visibility=visibility, members=members)
    issue = make.issue(project, owner, confidential=confidential)
    readable = _issue_readable(role, visibility, confidential)
    one = client.get(f"/projects/{project.id}/issues/{issue.iid}")
    assert one.status_code == (200 if readable else 404), (role, visibility, confidential, one.text[:200])
    listed = client.get(f"/projects/{project.id}/issues")
    if listed.status_code == 200:
        assert [i["iid"] for i in listed.json()] == ([issue.iid] if readable else [])
        assert listed.headers["X-Total"] == ("1" if readable else "0")
    else:
        assert not readable
        assert listed.status_code == 404
    if role != "anonymous":
        everywhere = client.get("/issues", params={"scope": "all"})
        assert [i["id"] for i in everywhere.json() if i["project_id"] == project.id] == (
            [issue.id] if readable else []
        )


@pytest.mark.parametrize("visibility", VISIBILITIES)
def test_a_guest_reads_the_confidential_issue_they_wrote(api, make, visibility):
    owner, guest = make.user(), make.user()
    project = make.project(owner=owner, visibility=visibility, members={guest: 10})
    mine = make.issue(project, guest, confidential=True)
    theirs = make.issue(project, owner, confidential=True)
    assert api(guest).get(f"/projects/{project.id}/issues/{mine.iid}").status_code == 200
    assert api(guest).get(f"/projects/{project.id}/issues/{theirs.iid}").status_code == 404
    assert [i["iid"] for i in api(guest).get(f"/projects/{project.id}/issues").json()] == [mine.iid]


@pytest.mark.parametrize("role", ROLES)
def test_issue_writes(api, make, role):
    """Open one (anyone signed in who sees the project), change another's (Reporter), delete (Owner)."""
    client, user = _caller(api, make, role)
    owner = make.user()
    members = {user: LEVEL[role]} if role in LEVEL else {}
    project = make.project(owner=owner, visibility="public", members=members)
    issue = make.issue(project, owner)
    level = LEVEL.get(role, 0)
    admin = role == "admin"
    created = client.post(f"/projects/{project.id}/issues", json={"title": "Mine"})
    assert created.status_code == (401 if role == "anonymous" else 201), created.text[:200]
    changed = client.put(f"/projects/{project.id}/issues/{issue.iid}", json={"title": "Changed"})
    want = 401 if role == "anonymous" else 200 if admin or level >= 20 else 403
    assert changed.status_code == want, changed.text[:200]
    deleted = client.delete(f"/projects/{project.id}/issues/{issue.iid}")
    want = 401 if role == "anonymous" else 204 if admin or level >= 50 else 403
    assert deleted.status_code == want, deleted.text[:200]
