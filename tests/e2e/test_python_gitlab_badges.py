"""python-gitlab, as published, working group and project badges and feature flags on a
running `kiln serve`."""

from __future__ import annotations

import pytest
from gitlab.exceptions import GitlabCreateError, GitlabDeleteError, GitlabGetError, GitlabSetError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e

LINK = "https://example.com/%{project_path}"
IMAGE = "https://example.com/%{project_id}/%{default_branch}.svg"


def test_group_badges(root, base_url, unique):
    owner = create_user(root, unique("owner"))
    gl = client_of(base_url, token_for(root, owner))
    path = unique("badged")
    group = gl.groups.create({"name": path, "path": path})
    project = gl.projects.create({"name": "app", "namespace_id": group.id, "initialize_with_readme": True})

    badge = group.badges.create({"link_url": LINK, "image_url": IMAGE, "name": "Docs"})
    assert badge.kind == "group"
    assert badge.rendered_link_url == f"https://example.com/{path}/app"
    assert badge.rendered_image_url == f"https://example.com/{project.id}/{project.default_branch}.svg"

    assert [(b.id, b.name) for b in group.badges.list()] == [(badge.id, "Docs")]
    assert [b.id for b in group.badges.list(name="docs")] == []

    badge.link_url = "https://example.org/%{project_id}"
    badge.save()
    assert group.badges.get(badge.id).link_url == "https://example.org/%{project_id}"

    preview = group.badges.render(link_url=LINK, image_url="https://example.com/i.svg")
    assert preview["rendered_link_url"] == f"https://example.com/{path}/app"
    assert preview["rendered_image_url"] == "https://example.com/i.svg"

    with pytest.raises(GitlabCreateError) as err:
        group.badges.create({"link_url": "ftp://example.com", "image_url": IMAGE})
    assert err.value.response_code == 400

    badge.delete()
    assert group.badges.list() == []
    with pytest.raises(GitlabGetError):
        group.badges.get(badge.id)


def test_project_badges_include_the_groups(root, base_url, unique):
    owner = create_user(root, unique("powner"))
    gl = client_of(base_url, token_for(root, owner))
    path = unique("pbadged")
    group = gl.groups.create({"name": path, "path": path})
    project = gl.projects.create({"name": "svc", "namespace_id": group.id})
    from_group = group.badges.create({"link_url": LINK, "image_url": IMAGE})
    own = project.badges.create({"link_url": LINK, "image_url": IMAGE, "name": "own"})
    assert own.kind == "project"
    assert own.rendered_link_url == f"https://example.com/{path}/svc"

    listed = project.badges.list()
    assert [(b.id, b.kind) for b in listed] == [(from_group.id, "group"), (own.id, "project")]
    assert listed[0].rendered_link_url == f"https://example.com/{path}/svc"

    own.image_url = "https://example.com/other.svg"
    own.save()
    assert project.badges.get(own.id).image_url == "https://example.com/other.svg"
    assert project.badges.render(link_url=LINK, image_url=IMAGE)["rendered_link_url"] == (
        f"https://example.com/{path}/svc"
    )

    with pytest.raises(GitlabDeleteError) as err:
        project.badges.delete(from_group.id)
    assert err.value.response_code == 404
    own.delete()
    assert [b.id for b in project.badges.list()] == [from_group.id]


def test_feature_flags(root, base_url, unique):
    name = unique("flag").replace("-", "_")
    user = create_user(root, unique("flagged"))

    flag = root.features.set(name, True)
    assert (flag.name, flag.state) == (name, "on")
    assert flag.gates == [{"key": "boolean", "value": True}]

    flag = root.features.set(name, False)
    assert flag.state == "off"
    flag = root.features.set(name, True, user=user.username)
    assert flag.state == "conditional"
    assert {"key": "actors", "value": [f"User:{user.id}"]} in flag.gates

    listed = {f.name: f for f in root.features.list(get_all=True)}
    assert listed[name].state == "conditional"

    listed[name].delete()
    assert name not in [f.name for f in root.features.list(get_all=True)]

    someone = client_of(base_url, token_for(root, user))
    with pytest.raises(GitlabSetError) as err:
        someone.features.set(name, True)
    assert err.value.response_code == 403
    assert name not in [f.name for f in root.features.list(get_all=True)]
