"""python-gitlab, as published, working groups, projects and members on a running `kiln serve`."""

from __future__ import annotations

import io
import subprocess
import tarfile

import httpx
import pytest
from gitlab.exceptions import GitlabCreateError, GitlabGetError, GitlabTransferProjectError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


def test_groups_and_subgroups(root, unique):
    path = unique("grp")
    group = root.groups.create({"name": path, "path": path})
    sub = root.groups.create({"name": "sub", "path": "sub", "parent_id": group.id})
    assert sub.full_path == f"{path}/sub"
    assert root.groups.get(f"{path}/sub").id == sub.id
    assert [g.id for g in group.subgroups.list()] == [sub.id]
    assert group.id in [g.id for g in root.groups.list(search=path)]
    group.description = "changed"
    group.save()
    assert root.groups.get(group.id).description == "changed"


def test_projects_in_user_and_group_namespaces(root, base_url, unique):
    user = create_user(root, unique("dev"))
    gl = client_of(base_url, token_for(root, user))
    own = gl.projects.create({"name": unique("own"), "visibility": "public", "topics": ["e2e"]})
    assert own.namespace["full_path"] == user.username
    path = unique("team")
    group = gl.groups.create({"name": path, "path": path})
    inside = gl.projects.create({"name": "svc", "namespace_id": group.id})
    assert inside.path_with_namespace == f"{path}/svc"
    got = gl.projects.get(f"{path}/svc")
    assert (got.id, got.permissions["group_access"]["access_level"]) == (inside.id, 50)
    got.description = "updated"
    got.save()
    assert gl.projects.get(inside.id).description == "updated"
    assert [p.id for p in gl.projects.list(owned=True, order_by="id", sort="asc")] == [own.id, inside.id]
    assert [p.id for p in gl.projects.list(topic="e2e", search=own.name)] == [own.id]
    assert [p.id for p in group.projects.list()] == [inside.id]


def test_duplicate_project_is_a_create_error(root, base_url, unique):
    gl = client_of(base_url, token_for(root, create_user(root, unique("dup"))))
    name = unique("p")
    gl.projects.create({"name": name})
    with pytest.raises(GitlabCreateError) as err:
        gl.projects.create({"name": name})
    assert err.value.response_code == 400


def test_list_all_pages_with_offset_and_keyset_pagination(root, base_url, unique):
    gl = client_of(base_url, token_for(root, create_user(root, unique("many"))))
    made = [gl.projects.create({"name": unique("p")}).id for _ in range(12)]
    offset = [p.id for p in gl.projects.list(owned=True, per_page=5, get_all=True, order_by="id", sort="asc")]
    assert offset == made
    keyset = gl.projects.list(
        owned=True, pagination="keyset", order_by="id", sort="asc", per_page=5, iterator=True
    )
    assert [p.id for p in keyset] == made


def test_members_of_projects_and_groups(root, base_url, unique):
    owner = create_user(root, unique("owner"))
    dev = create_user(root, unique("dev"))
    gl = client_of(base_url, token_for(root, owner))
    path = unique("grp")
    group = gl.groups.create({"name": path, "path": path})
    project = gl.projects.create({"name": "m", "namespace_id": group.id})
    member = project.members.create({"user_id": dev.id, "access_level": 30})
    assert member.access_level == 30
    member.access_level = 20
    member.save()
    assert project.members.get(dev.id).access_level == 20
    assert {m.id for m in project.members_all.list()} >= {owner.id, dev.id}
    dev_gl = client_of(base_url, token_for(root, dev))
    assert dev_gl.projects.get(project.id).permissions["project_access"]["access_level"] == 20
    project.members.delete(dev.id)
    with pytest.raises(GitlabGetError):
        dev_gl.projects.get(project.id)
    group.members.create({"user_id": dev.id, "access_level": 10})
    assert dev.id in [m.id for m in group.members.list()]
    assert dev_gl.projects.get(project.id).id == project.id


def test_star_archive_share_upload_fork_and_delete(root, base_url, unique):
    owner = create_user(root, unique("o"))
    other = create_user(root, unique("x"))
    gl = client_of(base_url, token_for(root, owner))
    project = gl.projects.create({"name": unique("p"), "visibility": "public"})
    project.star()
    assert project.star_count == 1
    starrers = gl.http_get(f"/projects/{project.id}/starrers")
    assert [s["user"]["id"] for s in starrers] == [owner.id]
    project.unstar()
    assert project.star_count == 0
    project.archive()
    assert gl.projects.get(project.id).archived is True
    project.unarchive()
    assert gl.projects.get(project.id).archived is False
    path = unique("share")
    group = gl.groups.create({"name": path, "path": path})
    project.share(group.id, 20)
    assert [g["group_id"] for g in gl.projects.get(project.id).shared_with_groups] == [group.id]
    project.unshare(group.id)
    uploaded = project.upload("notes.txt", filedata=b"hello")
    assert uploaded["url"].endswith("/notes.txt")
    assert uploaded["markdown"] == f"[notes.txt]({uploaded['url']})"
    other_gl = client_of(base_url, token_for(root, other))
    fork = other_gl.projects.get(project.id).forks.create({})
    assert fork.forked_from_project["id"] == project.id
    assert [f.id for f in project.forks.list()] == [fork.id]
    project.delete()
    with pytest.raises(GitlabGetError):
        gl.projects.get(project.id)


def test_custom_attributes_and_namespaces(root, base_url, unique):
    user = create_user(root, unique("ns"))
    gl = client_of(base_url, token_for(root, user))
    project = gl.projects.create({"name": unique("p")})
    root.projects.get(project.id).customattributes.set("team", "blue")
    found = root.projects.list(custom_attributes={"team": "blue"})
    assert project.id in [p.id for p in found]
    namespaces = gl.namespaces.list(search=user.username)
    assert [n.full_path for n in namespaces] == [user.username]
    assert gl.namespaces.get(namespaces[0].id).kind == "user"


def test_group_deletion_removes_its_projects(root, base_url, unique):
    gl = client_of(base_url, token_for(root, create_user(root, unique("g"))))
    path = unique("gone")
    group = gl.groups.create({"name": path, "path": path})
    project = gl.projects.create({"name": "p", "namespace_id": group.id})
    group.delete()
    with pytest.raises(GitlabGetError):
        gl.projects.get(project.id)
    with pytest.raises(GitlabGetError):
        gl.groups.get(group.id)


# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)


def test_transfer_a_project_and_clone_it_at_its_new_path(root, base_url, unique, tmp_path):
    from tests.e2e.test_git_http import Git

    owner = create_user(root, unique("mover"))
    token = token_for(root, owner)
    gl = client_of(base_url, token)
    project = gl.projects.create({"name": unique("moving"), "initialize_with_readme": True})
    path = unique("dest")
    group = gl.groups.create({"name": path, "path": path})
    project.transfer(group.full_path)
    moved = gl.projects.get(project.id)
    assert moved.path_with_namespace == f"{path}/{project.path}"
    assert moved.namespace["id"] == group.id
    assert moved.permissions["project_access"]["access_level"] == 50
    assert [g.id for g in moved.groups.list()] == [group.id]
    assert [p.id for p in group.projects.list()] == [project.id]
    with pytest.raises(GitlabTransferProjectError) as refused:
        moved.transfer(group.id)
    assert refused.value.response_code == 400
    url = moved.http_url_to_repo.replace("://", f"://oauth2:{token}@", 1)
    work = tmp_path / "clone"
    Git(tmp_path / "home").run("clone", "-q", url, str(work))
    assert (work / "README.md").read_text().startswith("# ")


def test_project_and_group_avatars(root, base_url, unique, tmp_path):
    gl = client_of(base_url, token_for(root, create_user(root, unique("pic"))))
    image = tmp_path / "logo.png"
    image.write_bytes(PNG)
    project = gl.projects.create({"name": unique("pictured"), "visibility": "public"})
    with image.open("rb") as fh:
        project.avatar = fh
        project.save()
    url = gl.projects.get(project.id).avatar_url
    # python-gitlab names an image it sends after the attribute.
    assert url == f"{base_url}/uploads/-/system/project/avatar/{project.id}/avatar.png"
    served = httpx.get(url, timeout=30)
    assert (served.status_code, served.content) == (200, PNG)
    path = unique("pics")
    with image.open("rb") as fh:
        group = gl.groups.create({"name": path, "path": path, "visibility": "public", "avatar": fh})
    assert group.avatar_url == f"{base_url}/uploads/-/system/group/avatar/{group.id}/avatar.png"
    assert httpx.get(group.avatar_url, timeout=30).content == PNG
    project.avatar = ""
    project.save()
    assert gl.projects.get(project.id).avatar_url is None
    assert httpx.get(url, timeout=30).status_code == 404


def test_housekeeping_storage_and_snapshot(root, base_url, unique, tmp_path):
    gl = client_of(base_url, token_for(root, create_user(root, unique("keeper"))))
    project = gl.projects.create({"name": unique("kept"), "initialize_with_readme": True})
    project.housekeeping()
    as_admin = root.projects.get(project.id)
    storage = as_admin.storage.get()
    assert storage.project_id == project.id
    assert storage.disk_path.startswith("@hashed/")
    assert storage.repository_storage == "default"
    snapshot = as_admin.snapshot()
    with tarfile.open(fileobj=io.BytesIO(snapshot)) as tar:
        tar.extractall(tmp_path / "snap", filter="data")
    check = subprocess.run(
        ["git", "--git-dir", str(tmp_path / "snap"), "log", "--format=%s", "main"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert check.stdout.strip() == "Initial commit"
    with pytest.raises(GitlabGetError) as refused:
        gl.projects.get(project.id).storage.get()
    assert refused.value.response_code == 403
