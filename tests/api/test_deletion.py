"""Deleting a group, a project or a user leaves nothing behind: no row that points at what
is gone (every foreign key of every table is checked), no repository folder, no upload."""

from __future__ import annotations

from sqlalchemy import and_, select

from kiln.git.layout import repository_path
from kiln.models import Base, Namespace, Project
from kiln.models.namespaces import DEVELOPER, REPORTER


def dangling(db) -> list[str]:
    """Rows whose foreign key names a row that no longer exists, for every table."""
    found = []
    for table in Base.metadata.sorted_tables:
        for fk in table.foreign_keys:
            parent = fk.column.table.alias(
                "referenced"
            )  # an alias: foreign keys may point at their own table
            referenced = parent.c[fk.column.name]
            rows = db.execute(
                select(fk.parent).where(
                    and_(fk.parent.is_not(None), ~select(referenced).where(referenced == fk.parent).exists())
                )
            ).all()
            if rows:
                found.append(f"{table.name}.{fk.parent.name} -> {fk.column.table.name}: {len(rows)}")
    return found


def rich_tree(api, make, settings):
    """A group with a subgroup, projects (each with its repository) with members, stars,
    topics, shares, forks, uploads, custom attributes and access requests."""
    owner, dev, fan = make.user(), make.user(), make.user()
    top = make.group(owners=[owner], members={dev: DEVELOPER}, visibility="public")
    sub = make.group(parent=top, members={fan: REPORTER}, visibility="public")
    other = make.group(owners=[owner], visibility="public")
    projects = []
    for ns in (top, sub):
        created = (
            api(owner)
            .post(
                "/projects",
                json={"name": f"p{ns.id}", "namespace_id": ns.id, "topics": ["t"], "visibility": "public"},
            )
            .json()
        )
        pid = created["id"]
        projects.append(pid)
        api(owner).post(f"/projects/{pid}/members", json={"user_id": fan.id, "access_level": 10})
        api(fan).post(f"/projects/{pid}/star")
        api(owner).post(f"/projects/{pid}/share", json={"group_id": other.id, "group_access": 20})
        api(owner).post(f"/projects/{pid}/uploads", files={"file": ("a.txt", b"attached")})
        api("root").put(f"/projects/{pid}/custom_attributes/k", json={"value": "v"})
        assert (repository_path(settings.data_dir / "repositories", pid) / "HEAD").is_file()
    fork = api(fan).post(f"/projects/{projects[0]}/fork").json()
    outsider = make.user()
    api(outsider).post(f"/groups/{sub.id}/access_requests")
    api("root").put(f"/groups/{sub.id}/custom_attributes/k", json={"value": "v"})
    return owner, top, projects, fork


def test_deleting_a_group_leaves_nothing_behind(api, make, db, settings, drain):
    owner, top, projects, fork = rich_tree(api, make, settings)
    traversal = top.traversal
    assert api(owner).delete(f"/groups/{top.id}").status_code == 202
    assert drain() >= len(projects)
    db.expire_all()
    assert dangling(db) == []
    assert db.scalars(select(Project.id).where(Project.id.in_(projects))).all() == []
    assert db.scalars(select(Namespace.id).where(Namespace.traversal.startswith(traversal))).all() == []
    # The fork lives in its owner's namespace and stays, no longer a fork of anything.
    assert api("root").get(f"/projects/{fork['id']}").json().get("forked_from_project") is None
    for pid in projects:
        assert not repository_path(settings.data_dir / "repositories", pid).exists()
        assert not (settings.data_dir / "uploads" / "project" / str(pid)).exists()


def test_deleting_a_project_leaves_nothing_behind(api, make, db, settings, drain):
    owner, _top, projects, _fork = rich_tree(api, make, settings)
    assert api(owner).delete(f"/projects/{projects[0]}").status_code == 202
    drain()
    db.expire_all()
    assert dangling(db) == []
    assert not repository_path(settings.data_dir / "repositories", projects[0]).exists()
    assert repository_path(settings.data_dir / "repositories", projects[1]).exists()


def test_deleting_a_user_leaves_nothing_behind(api, make, db, settings, drain):
    owner, _top, projects, fork = rich_tree(api, make, settings)
    fan_id = api("root").get(f"/projects/{fork['id']}").json()["owner"]["id"]
    assert api("root").delete(f"/users/{fan_id}?hard_delete=true").status_code == 204
    drain()
    db.expire_all()
    assert dangling(db) == []
    assert db.get(Project, fork["id"]) is None
    # The user's star went with them, and the count says so.
    assert api(owner).get(f"/projects/{projects[0]}").json()["star_count"] == 0
