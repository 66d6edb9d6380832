"""Projects (spec part 3 "Projects" and "States and transitions"; GitLab's documented
behaviour where the spec says "not shown")."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from kiln.auth.actor import Actor
from kiln.git.layout import repository_path
from kiln.models import Job, Member, Project, ProjectGroupLink, ProjectStar, ProjectVisibilityCount
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from kiln.queries import projects as project_queries
from kiln.queries.users import row_by_id
from kiln.services import instance_settings, project_lifecycle
from kiln.services.project_lifecycle import DESTROY_ADJOURNED, REMOVE_FILES
from tests.api.test_files import files_url, write_body
from tests.repositories import new_project
from tests.statements import count, recording

# ------------------------------------------------------------------ create


def test_create_with_name_only_derives_the_path_and_uses_the_callers_namespace(api, make):
    u = make.user()
    r = api(u).post("/projects", json={"name": "My Project"})
    assert r.status_code == 201
    body = r.json()
    assert (body["name"], body["path"], body["path_with_namespace"]) == (
        "My Project",
        "my-project",
        f"{u.username}/my-project",
    )
    assert body["namespace"]["kind"] == "user"
    assert body["namespace"]["full_path"] == u.username
    assert body["visibility"] == "private"
    assert body["creator_id"] == u.id
    assert body["owner"]["id"] == u.id
    assert "permissions" not in body  # write endpoints answer the project without permissions


def test_create_with_a_valid_name_keeps_it_as_the_path(api, make):
    u = make.user()
    r = api(u).post("/projects", json={"name": "Foo"})
    assert (r.status_code, r.json()["path"]) == (201, "Foo")


def test_create_with_path_only_uses_it_as_the_name(api, make):
    u = make.user()
    r = api(u).post("/projects", json={"path": "tool"})
    assert (r.status_code, r.json()["name"], r.json()["path"]) == (201, "tool", "tool")


def test_create_without_name_and_path_is_400(api, make):
    r = api(make.user()).post("/projects", json={"description": "x"})
    assert r.status_code == 400
    assert r.json() == {"error": "name, path are missing, at least one parameter must be provided"}


def test_create_needs_authentication(api):
    r = api().post("/projects", json={"name": "x"})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_create_duplicate_in_namespace_is_400_with_field_errors(api, make):
    u = make.user()
    assert api(u).post("/projects", json={"name": "dup"}).status_code == 201
    r = api(u).post("/projects", json={"name": "dup"})
    assert r.status_code == 400
    assert r.json() == {"message": {"name": ["has already been taken"], "path": ["has already been taken"]}}


def test_create_duplicate_path_is_case_insensitive(api, make):
    u = make.user()
    assert api(u).post("/projects", json={"name": "one", "path": "Tool"}).status_code == 201
    r = api(u).post("/projects", json={"name": "two", "path": "tool"})
    assert (r.status_code, r.json()) == (400, {"message": {"path": ["has already been taken"]}})


def test_create_with_an_invalid_path_is_400(api, make):
    r = api(make.user()).post("/projects", json={"name": "x", "path": "-bad.git"})
    assert r.status_code == 400
    assert list(r.json()["message"]) == ["path"]
    assert "Cannot start with '-'" in r.json()["message"]["path"][0]


def test_create_with_an_invalid_visibility_is_400(api, make):
    r = api(make.user()).post("/projects", json={"name": "x", "visibility": "secret"})
    assert (r.status_code, r.json()) == (400, {"error": "visibility does not have a valid value"})


def test_create_in_a_group_as_developer(api, make):
    u = make.user()
    g = make.group(members={u: DEVELOPER})
    r = api(u).post("/projects", json={"name": "inside", "namespace_id": g.id})
    assert r.status_code == 201
    assert r.json()["namespace"] == {
        "id": g.id,
        "name": g.name,
        "path": g.path,
        "kind": "group",
        "full_path": g.full_path,
        "parent_id": None,
        "avatar_url": None,
        "web_url": f"http://kiln.test/groups/{g.full_path}",
    }
    assert "owner" not in r.json()


def test_create_in_a_group_as_reporter_is_refused(api, make):
    u = make.user()
    g = make.group(members={u: REPORTER})
    r = api(u).post("/projects", json={"name": "inside", "namespace_id": g.id})
    assert (r.status_code, r.json()) == (400, {"message": {"namespace": ["is not valid"]}})


def test_create_in_an_unknown_namespace_is_refused(api, make):
    r = api(make.user()).post("/projects", json={"name": "x", "namespace_id": 999999})
    assert (r.status_code, r.json()) == (400, {"message": {"namespace": ["is not valid"]}})


def test_create_in_another_users_namespace_is_refused(api, make):
    u, other = make.user(), make.user()
    r = api(u).post("/projects", json={"name": "x", "namespace_id": other.row.namespace_id})
    assert (r.status_code, r.json()) == (400, {"message": {"namespace": ["is not valid"]}})


def test_create_above_the_groups_visibility_is_lowered_to_it(api, make):
    u = make.user()
    g = make.group(owners=[u], visibility="internal")
    r = api(u).post("/projects", json={"name": "x", "namespace_id": g.id, "visibility": "public"})
    assert (r.status_code, r.json()["visibility"]) == (201, "internal")


def test_create_takes_the_instance_default_visibility(api, make, db):
    instance_settings.update(db, {"default_project_visibility": "internal"})
    r = api(make.user()).post("/projects", json={"name": "x"})
    assert r.json()["visibility"] == "internal"


def test_a_restricted_visibility_is_refused_to_a_non_admin(api, make):
    r = api("root").put("/application/settings", json={"restricted_visibility_levels": ["public"]})
    assert r.status_code == 200, r.text
    u = make.user()
    refused = api(u).post("/projects", json={"name": "open", "visibility": "public"})
    assert (refused.status_code, refused.json()) == (
        400,
        {"message": {"visibility_level": ["Public has been restricted by your GitLab administrator"]}},
    )
    assert api(u).get("/projects", params={"owned": "true"}).json() == []
    made = api(u).post("/projects", json={"name": "closed"}).json()
    changed = api(u).put(f"/projects/{made['id']}", json={"visibility": "public"})
    assert changed.status_code == 400
    assert api(u).get(f"/projects/{made['id']}").json()["visibility"] == "private"


def test_an_admin_may_use_a_restricted_visibility(api):
    api("root").put("/application/settings", json={"restricted_visibility_levels": ["public"]})
    r = api("root").post("/projects", json={"name": "open-by-admin", "visibility": "public"})
    assert (r.status_code, r.json()["visibility"]) == (201, "public")


def test_create_with_readme_has_a_default_branch(api, make):
    u = make.user()
    r = api(u).post("/projects", json={"name": "x", "initialize_with_readme": True})
    assert (r.status_code, r.json()["default_branch"]) == (201, "main")
    r = api(u).post(
        "/projects", json={"name": "y", "initialize_with_readme": True, "default_branch": "trunk"}
    )
    assert r.json()["default_branch"] == "trunk"


def test_create_accepts_query_string_parameters_and_capitalised_booleans(api, make):
    u = make.user()
    r = api(u).post("/projects?name=q&remove_source_branch_after_merge=False&issues_enabled=False", json={})
    assert r.status_code == 201
    assert r.json()["remove_source_branch_after_merge"] is False
    assert (r.json()["issues_enabled"], r.json()["issues_access_level"]) == (False, "disabled")


def test_create_with_topics(api, make):
    r = api(make.user()).post("/projects", json={"name": "x", "topics": ["b", "a", "b"]})
    assert (r.json()["topics"], r.json()["tag_list"]) == (["b", "a"], ["a", "b"])


def test_create_for_a_user_is_admin_only(api, make):
    u = make.user()
    r = api(u).post(f"/projects/user/{u.id}", json={"name": "x"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api("root").post(f"/projects/user/{u.id}", json={"name": "x"})
    assert (r.status_code, r.json()["namespace"]["full_path"]) == (201, u.username)
    r = api("root").post("/projects/user/999999", json={"name": "x"})
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_create_beyond_the_personal_project_limit_is_refused(api, make):
    u = make.user(projects_limit=1)
    assert api(u).post("/projects", json={"name": "one"}).status_code == 201
    r = api(u).post("/projects", json={"name": "two"})
    assert r.status_code == 400
    assert list(r.json()["message"]) == ["limit_reached"]


# ------------------------------------------------------------------ read


def test_get_by_id_and_by_encoded_full_path(api, make):
    u = make.user()
    p = make.project(owner=u)
    by_id = api(u).get(f"/projects/{p.id}")
    by_path = api(u).get(f"/projects/{u.username}%2F{p.path}")
    assert by_id.status_code == by_path.status_code == 200
    assert by_id.json() == by_path.json()
    # The holder of a personal namespace is its projects' Owner, as GitLab reports it.
    assert by_id.json()["permissions"] == {
        "project_access": {"access_level": OWNER, "notification_level": 3},
        "group_access": None,
    }


def test_get_full_view_has_the_spec_fields(api, make):
    u = make.user()
    p = make.project(owner=u)
    body = api(u).get(f"/projects/{p.id}").json()
    for field in (
        "visibility", "owner", "issues_enabled", "open_issues_count", "merge_requests_enabled", "jobs_enabled",
        "wiki_enabled", "snippets_enabled", "can_create_merge_request_in", "resolve_outdated_diff_discussions",
        "container_registry_enabled", "creator_id", "namespace", "import_status", "import_error", "permissions",
        "archived", "shared_runners_enabled", "runners_token", "ci_default_git_depth", "public_jobs",
        "shared_with_groups", "only_allow_merge_if_pipeline_succeeds",
        "only_allow_merge_if_all_discussions_are_resolved", "remove_source_branch_after_merge",
        "request_access_enabled", "merge_method", "autoclose_referenced_issues", "suggestion_commit_message",
        "marked_for_deletion_at", "marked_for_deletion_on", "_links",
    ):  # fmt: skip
        assert field in body, field
    assert body["_links"]["self"] == f"http://kiln.test/api/v4/projects/{p.id}"
    assert body["http_url_to_repo"] == f"http://kiln.test/{u.username}/{p.path}.git"
    assert body["web_url"] == f"http://kiln.test/{u.username}/{p.path}"
    assert body["import_status"] == "none"
    assert "statistics" not in body


def test_get_with_statistics(api, make):
    u = make.user()
    p = make.project(owner=u)
    stats = api(u).get(f"/projects/{p.id}?statistics=true").json()["statistics"]
    assert set(stats) == {
        "commit_count", "storage_size", "repository_size", "wiki_size", "lfs_objects_size",
        "job_artifacts_size", "pipeline_artifacts_size", "packages_size", "snippets_size", "uploads_size",
        "container_registry_size",
    }  # fmt: skip


def test_get_with_license_adds_the_license_fields(api, make):
    u = make.user()
    p = make.project(owner=u)
    assert "license" not in api(u).get(f"/projects/{p.id}").json()
    body = api(u).get(f"/projects/{p.id}?license=true").json()
    assert body["license"] is None
    assert "license_url" in body


def test_anonymous_sees_a_public_project_in_the_simple_view(api, make):
    p = make.project(visibility="public")
    r = api().get(f"/projects/{p.id}")
    assert r.status_code == 200
    assert set(r.json()) == {
        "id", "description", "default_branch", "ssh_url_to_repo", "http_url_to_repo", "web_url",
        "readme_url", "tag_list", "topics", "name", "name_with_namespace", "path", "path_with_namespace",
        "created_at", "last_activity_at", "forks_count", "avatar_url", "star_count", "visibility", "namespace",
    }  # fmt: skip


def test_private_project_is_404_for_anonymous_and_non_members(api, make):
    p = make.project()
    assert api().get(f"/projects/{p.id}").json() == {"message": "404 Project Not Found"}
    r = api(make.user()).get(f"/projects/{p.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_internal_project_is_visible_to_signed_in_users_not_external_ones(api, make):
    p = make.project(visibility="internal")
    assert api(make.user()).get(f"/projects/{p.id}").status_code == 200
    assert api(make.user(external=True)).get(f"/projects/{p.id}").status_code == 404
    assert api().get(f"/projects/{p.id}").status_code == 404


def test_unknown_project_is_404(api, make):
    r = api(make.user()).get("/projects/999999")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert api(make.user()).get("/projects/no%2Fsuch").status_code == 404


def test_permissions_show_direct_and_group_access(api, make):
    u = make.user()
    g = make.group(members={u: REPORTER})
    p = make.project(namespace=g, members={u: DEVELOPER})
    perms = api(u).get(f"/projects/{p.id}").json()["permissions"]
    assert perms == {
        "project_access": {"access_level": DEVELOPER, "notification_level": 3},
        "group_access": {"access_level": REPORTER, "notification_level": 3},
    }


def test_access_is_inherited_from_ancestor_groups(api, make):
    u = make.user()
    top = make.group(members={u: GUEST})
    sub = make.group(parent=top)
    p = make.project(namespace=sub)
    r = api(u).get(f"/projects/{p.id}")
    assert r.status_code == 200
    assert r.json()["permissions"]["group_access"] == {"access_level": GUEST, "notification_level": 3}


def test_expired_membership_grants_nothing(api, make):
    u = make.user()
    p = make.project()
    make.member(p, u, DEVELOPER, expires_at=date.today() - timedelta(days=1))
    assert api(u).get(f"/projects/{p.id}").status_code == 404


def test_guest_of_a_private_project_sees_no_code_fields(api, make):
    u = make.user()
    p = make.project(members={u: GUEST}, default_branch="main")
    body = api(u).get(f"/projects/{p.id}").json()
    assert body["default_branch"] is None
    assert api(make.user()).get(f"/projects/{p.id}").status_code == 404


def _write(api, user, project, path: str, *, branch: str = "main") -> None:
    r = api(user).post(files_url(project, path), json=write_body(branch=branch, content="text\n"))
    assert r.status_code == 201, r.text


def _delete(api, user, project, path: str, *, branch: str = "main") -> None:
    assert api(user).delete(files_url(project, path), params=write_body(branch=branch)).status_code == 204


def test_readme_url_names_the_readme_of_the_default_branch(api, make):
    u = make.user()
    r = api(u).post("/projects", json={"name": "readme", "initialize_with_readme": True})
    assert r.status_code == 201, r.text
    created = r.json()
    expected = f"{created['web_url']}/-/blob/main/README.md"
    assert created["readme_url"] == expected
    assert api(u).get(f"/projects/{created['id']}").json()["readme_url"] == expected


def test_readme_url_is_null_without_a_readme(api, make):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    assert p["readme_url"] is None
    _write(api, u, p, "notes.md")
    assert api(u).get(f"/projects/{p['id']}").json()["readme_url"] is None


def test_readme_url_prefers_a_rendered_readme_over_a_plain_one(api, make):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    _write(api, u, p, "README")
    assert api(u).get(f"/projects/{p['id']}").json()["readme_url"].endswith("/-/blob/main/README")
    _write(api, u, p, "readme.rst")
    assert api(u).get(f"/projects/{p['id']}").json()["readme_url"].endswith("/-/blob/main/readme.rst")


def test_readme_url_follows_the_readme_and_the_default_branch(api, make):
    u = make.user()
    p = new_project(api, make, u)
    assert p["readme_url"] == f"{p['web_url']}/-/blob/main/README.md"
    api(u).post(f"/projects/{p['id']}/repository/branches", json={"branch": "bare", "ref": "main"})
    _delete(api, u, p, "README.md", branch="bare")
    assert api(u).get(f"/projects/{p['id']}").json()["readme_url"] == p["readme_url"]
    moved = api(u).put(f"/projects/{p['id']}", json={"default_branch": "bare"}).json()
    assert moved["readme_url"] is None
    back = api(u).put(f"/projects/{p['id']}", json={"default_branch": "main"}).json()
    assert back["readme_url"] == p["readme_url"]
    _delete(api, u, p, "README.md")
    assert api(u).get(f"/projects/{p['id']}").json()["readme_url"] is None


def test_readme_url_is_hidden_from_those_who_may_not_read_code(api, make, db):
    u, guest = make.user(), make.user()
    p = new_project(api, make, u)
    make.member(db.get(Project, p["id"]), guest, GUEST)
    readme_url = f"{p['web_url']}/-/blob/main/README.md"
    assert api(u).get(f"/projects/{p['id']}").json()["readme_url"] == readme_url
    assert api(guest).get(f"/projects/{p['id']}").json()["readme_url"] is None


def test_a_fork_keeps_its_parents_readme_url(api, make):
    u = make.user()
    p = new_project(api, make, u, visibility="public")
    fork = api(make.user()).post(f"/projects/{p['id']}/fork").json()
    assert fork["readme_url"] == f"{fork['web_url']}/-/blob/main/README.md"


def test_head_on_a_project(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).head(f"/projects/{p.id}")
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, b"", "application/json")


# ------------------------------------------------------------------ update


def test_maintainer_renames_a_project(api, make):
    u = make.user()
    p = make.project(members={u: MAINTAINER})
    r = api(u).put(f"/projects/{p.id}", json={"name": "Renamed", "path": "renamed", "description": "d"})
    assert r.status_code == 200
    assert (r.json()["name"], r.json()["path"], r.json()["description"]) == ("Renamed", "renamed", "d")
    assert "permissions" not in r.json()


def test_developer_cannot_update(api, make):
    u = make.user()
    p = make.project(members={u: DEVELOPER})
    r = api(u).put(f"/projects/{p.id}", json={"description": "d"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_non_member_update_of_a_public_project_is_403(api, make):
    p = make.project(visibility="public")
    assert api(make.user()).put(f"/projects/{p.id}", json={"description": "d"}).status_code == 403


def test_non_member_update_of_a_private_project_is_404(api, make):
    p = make.project()
    assert api(make.user()).put(f"/projects/{p.id}", json={"description": "d"}).status_code == 404


def test_only_owners_change_visibility(api, make):
    m, o = make.user(), make.user()
    p = make.project(members={m: MAINTAINER, o: OWNER})
    assert api(m).put(f"/projects/{p.id}", json={"visibility": "public"}).status_code == 403
    r = api(o).put(f"/projects/{p.id}", json={"visibility": "public"})
    assert (r.status_code, r.json()["visibility"]) == (200, "public")


def test_update_above_the_groups_visibility_is_400(api, make):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(namespace=g)
    r = api(u).put(f"/projects/{p.id}", json={"visibility": "public"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"visibility_level": ["public is not allowed in a private group."]}},
    )


def test_update_to_a_taken_path_is_400(api, make):
    u = make.user()
    make.project(owner=u, path="taken")
    p = make.project(owner=u)
    r = api(u).put(f"/projects/{p.id}", json={"path": "taken"})
    assert (r.status_code, r.json()) == (400, {"message": {"path": ["has already been taken"]}})


def test_update_of_a_wrongly_typed_field_is_400(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).put(f"/projects/{p.id}", json={"ci_default_git_depth": "deep"})
    assert (r.status_code, r.json()) == (400, {"error": "ci_default_git_depth is invalid"})


def test_update_maps_the_legacy_feature_booleans(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).put(f"/projects/{p.id}", json={"jobs_enabled": False, "wiki_access_level": "private"})
    assert (r.json()["jobs_enabled"], r.json()["builds_access_level"]) == (False, "disabled")
    assert r.json()["wiki_access_level"] == "private"


def test_update_replaces_topics(api, make):
    u = make.user()
    p = make.project(owner=u)
    api(u).put(f"/projects/{p.id}", json={"topics": ["x", "y"]})
    r = api(u).put(f"/projects/{p.id}", json={"topics": "z"})
    assert r.json()["topics"] == ["z"]


# ------------------------------------------------------------------ archive


def test_archive_and_unarchive_are_idempotent(api, make):
    u = make.user()
    p = make.project(owner=u)
    for _ in range(2):
        r = api(u).post(f"/projects/{p.id}/archive")
        assert (r.status_code, r.json()["archived"]) == (201, True)
    for _ in range(2):
        r = api(u).post(f"/projects/{p.id}/unarchive")
        assert (r.status_code, r.json()["archived"]) == (201, False)


def test_maintainer_cannot_archive(api, make):
    u = make.user()
    p = make.project(members={u: MAINTAINER})
    assert api(u).post(f"/projects/{p.id}/archive").status_code == 403


def test_an_archived_project_refuses_writes(api, make):
    u = make.user()
    p = make.project(owner=u, archived=True)
    assert api(u).put(f"/projects/{p.id}", json={"description": "x"}).status_code == 403
    r = api(u).post(f"/projects/{p.id}/uploads", files={"file": ("a.txt", b"hi")})
    assert r.status_code == 403
    assert api(u).get(f"/projects/{p.id}").status_code == 200


def test_archived_filter(api, make):
    u = make.user()
    a = make.project(owner=u, archived=True)
    b = make.project(owner=u)
    ids = lambda q: [x["id"] for x in api(u).get(f"/projects?owned=true&{q}").json()]  # noqa: E731
    assert ids("archived=true") == [a.id]
    assert ids("archived=false") == [b.id]


# ------------------------------------------------------------------ delete and restore


def test_delete_removes_the_project_at_once_and_queues_its_files(api, make, db, settings, drain):
    u = make.user()
    pid = api(u).post("/projects", json={"name": "gone", "initialize_with_readme": True}).json()["id"]
    repo = repository_path(settings.data_dir / "repositories", pid)
    api(u).post(f"/projects/{pid}/uploads", files={"file": ("a.txt", b"hi")})
    uploads_dir = settings.data_dir / "uploads" / "project" / str(pid)
    assert uploads_dir.exists()
    assert (repo / "HEAD").is_file()
    r = api(u).delete(f"/projects/{pid}")
    assert (r.status_code, r.json()) == (202, {"message": "202 Accepted"})
    assert api(u).get(f"/projects/{pid}").status_code == 404
    kinds = db.scalars(select(Job.kind).where(Job.state == "queued")).all()
    assert REMOVE_FILES in kinds
    assert repo.exists()  # files leave with the job, not with the request
    assert drain() >= 1
    assert not uploads_dir.exists()
    assert not repo.exists()


def test_only_owners_delete(api, make):
    u = make.user()
    p = make.project(members={u: MAINTAINER})
    assert api(u).delete(f"/projects/{p.id}").status_code == 403
    assert api(make.user()).delete(f"/projects/{p.id}").status_code == 404
    assert api().delete(f"/projects/{p.id}").status_code == 401


def test_deleting_a_fork_decrements_its_parents_forks_count(api, make):
    u = make.user()
    src = make.project(visibility="public")
    fork = api(u).post(f"/projects/{src.id}/fork").json()
    assert api(u).get(f"/projects/{src.id}").json()["forks_count"] == 1
    api(u).delete(f"/projects/{fork['id']}")
    assert api(u).get(f"/projects/{src.id}").json()["forks_count"] == 0


def test_adjourned_deletion_marks_then_a_job_removes(api, make, db, drain):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    p = make.project(owner=u)
    r = api(u).delete(f"/projects/{p.id}")
    assert (r.status_code, r.json()) == (202, {"message": "202 Accepted"})
    body = api(u).get(f"/projects/{p.id}").json()
    assert body["marked_for_deletion_on"] == datetime.now(UTC).date().isoformat()
    assert body["archived"] is True
    assert drain() == 0  # not due yet
    db.execute(
        update(Job)
        .where(Job.kind == DESTROY_ADJOURNED)
        .values(run_at=datetime.now(UTC) - timedelta(seconds=1))
    )
    db.commit()
    assert drain() >= 1
    assert api(u).get(f"/projects/{p.id}").status_code == 404


@pytest.mark.committing
def test_a_delete_that_read_the_project_before_another_marked_it_does_not_mark_it_again(
    api, make, db, runtime
):
    """Two DELETEs at once: the second reads the mark in its write, as a DELETE after it does
    (the project goes at once), and never queues a second adjourned removal."""
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    pid = make.project(owner=u).id
    db.commit()
    actor = Actor(user=row_by_id(db, u.id), via="personal_access_token", scopes=None)
    with runtime.sessions() as second:
        assert second.get(Project, pid).marked_for_deletion_on is None  # read before the first DELETE
        assert api(u).delete(f"/projects/{pid}").status_code == 202

        project_lifecycle.delete_project(second, actor, str(pid))

    db.rollback()  # a fresh read
    assert (db.get(Project, pid), db.scalars(select(Job.kind)).all().count(DESTROY_ADJOURNED)) == (None, 1)


def test_restore_unmarks_and_the_job_leaves_the_project_alone(api, make, db, drain):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    p = make.project(owner=u)
    api(u).delete(f"/projects/{p.id}")
    r = api(u).post(f"/projects/{p.id}/restore")
    assert (r.status_code, r.json()["marked_for_deletion_on"], r.json()["archived"]) == (201, None, False)
    db.execute(update(Job).values(run_at=datetime.now(UTC) - timedelta(seconds=1)))
    db.commit()
    drain()
    assert api(u).get(f"/projects/{p.id}").status_code == 200


def test_restore_of_an_unmarked_project_is_400(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).post(f"/projects/{p.id}/restore")
    assert (r.status_code, r.json()) == (400, {"message": "Project already not marked for deletion"})


def test_permanent_removal_needs_a_mark_and_the_full_path(api, make, db):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    p = make.project(owner=u)
    r = api(u).delete(f"/projects/{p.id}?permanently_remove=true")
    assert (r.status_code, r.json()) == (400, {"message": "Project must be marked for deletion first."})
    api(u).delete(f"/projects/{p.id}")
    r = api(u).delete(f"/projects/{p.id}?permanently_remove=true&full_path=wrong")
    assert r.status_code == 400
    r = api(u).delete(f"/projects/{p.id}?permanently_remove=true&full_path={u.username}/{p.path}")
    assert r.status_code == 202
    assert api(u).get(f"/projects/{p.id}").status_code == 404


def test_deleting_a_user_removes_their_personal_projects(api, make, db):
    u = make.user()
    pid = make.project(owner=u).id
    assert api("root").delete(f"/users/{u.id}").status_code == 204
    db.expire_all()
    assert db.get(Project, pid) is None
    assert REMOVE_FILES in db.scalars(select(Job.kind)).all()


# ------------------------------------------------------------------ forks


def test_fork_into_the_callers_namespace(api, make):
    u = make.user()
    src = make.project(visibility="public", description="source")
    r = api(u).post(f"/projects/{src.id}/fork")
    assert r.status_code == 201
    body = r.json()
    assert body["namespace"]["full_path"] == u.username
    assert (body["path"], body["description"]) == (src.path, "source")
    assert body["forked_from_project"]["id"] == src.id
    assert api(u).get(f"/projects/{src.id}").json()["forks_count"] == 1


def test_fork_with_new_name_and_path_into_a_group(api, make):
    u = make.user()
    g = make.group(owners=[u], visibility="public")
    src = make.project(visibility="public")
    r = api(u).post(f"/projects/{src.id}/fork", json={"namespace_id": g.id, "name": "F", "path": "f"})
    assert (r.status_code, r.json()["path_with_namespace"]) == (201, f"{g.full_path}/f")


def test_fork_twice_into_the_same_namespace_is_409(api, make):
    u = make.user()
    src = make.project(visibility="public")
    api(u).post(f"/projects/{src.id}/fork")
    r = api(u).post(f"/projects/{src.id}/fork")
    assert r.status_code == 409
    assert r.json() == {"message": ["Name has already been taken", "Path has already been taken"]}


def test_fork_of_a_hidden_project_is_404(api, make):
    src = make.project()
    r = api(make.user()).post(f"/projects/{src.id}/fork")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_fork_of_a_project_whose_forking_is_disabled_is_a_bare_404(api, make):
    src = make.project(visibility="public")
    api("root").put(f"/projects/{src.id}", json={"forking_access_level": "disabled"})
    r = api(make.user()).post(f"/projects/{src.id}/fork")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


def test_fork_into_a_namespace_without_rights_is_404(api, make):
    u = make.user()
    g = make.group(members={u: REPORTER}, visibility="public")
    src = make.project(visibility="public")
    r = api(u).post(f"/projects/{src.id}/fork", json={"namespace_id": g.id})
    assert (r.status_code, r.json()) == (404, {"message": "404 Target Namespace Not Found"})
    r = api(u).post(f"/projects/{src.id}/fork", json={"namespace_path": "nope"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Namespace Not Found"})


def test_fork_is_never_more_visible_than_its_source(api, make):
    u = make.user()
    src = make.project(visibility="internal")
    r = api(u).post(f"/projects/{src.id}/fork", json={"visibility": "public"})
    assert r.json()["visibility"] == "internal"


def test_list_forks(api, make):
    u, v = make.user(), make.user()
    src = make.project(visibility="public")
    a = api(u).post(f"/projects/{src.id}/fork").json()
    b = api(v).post(f"/projects/{src.id}/fork").json()
    r = api(u).get(f"/projects/{src.id}/forks?order_by=id&sort=asc")
    assert [x["id"] for x in r.json()] == [a["id"], b["id"]]


# ------------------------------------------------------------------ stars


def test_star_and_unstar(api, make):
    u = make.user()
    p = make.project(visibility="public")
    r = api(u).post(f"/projects/{p.id}/star")
    assert (r.status_code, r.json()["star_count"]) == (201, 1)
    r = api(u).post(f"/projects/{p.id}/star")
    assert (r.status_code, r.content) == (304, b"")
    r = api(u).post(f"/projects/{p.id}/unstar")
    assert (r.status_code, r.json()["star_count"]) == (201, 0)
    assert api(u).post(f"/projects/{p.id}/unstar").status_code == 304


def test_starring_needs_authentication_and_visibility(api, make):
    assert api().post(f"/projects/{make.project(visibility='public').id}/star").status_code == 401
    assert api(make.user()).post(f"/projects/{make.project().id}/star").status_code == 404


def test_starrers(api, make):
    u, v = make.user(), make.user()
    p = make.project(visibility="public")
    api(u).post(f"/projects/{p.id}/star")
    api(v).post(f"/projects/{p.id}/star")
    r = api().get(f"/projects/{p.id}/starrers")
    assert r.status_code == 200
    assert [s["user"]["username"] for s in r.json()] == [u.username, v.username]
    assert set(r.json()[0]) == {"starred_since", "user"}
    assert r.headers["x-total"] == "2"
    r = api().get(f"/projects/{p.id}/starrers?search={v.username}")
    assert [s["user"]["id"] for s in r.json()] == [v.id]


def test_lists_of_each_user_or_project_run_one_kept_statement_per_shape(api, make):
    """Whose projects, whose stars, which project's forks: values of the list's statement.
    A second user's lists answer their own projects and keep no statement of their own."""
    viewer = make.user()
    kept = []
    for owner in (make.user(), make.user()):
        mine = make.project(owner=owner, visibility="public", name=f"mine-{owner.id}")
        fork = (
            api(viewer)
            .post(f"/projects/{mine.id}/fork", json={"path": f"fork-{owner.id}", "name": f"fork-{owner.id}"})
            .json()
        )
        other = make.project(owner=make.user(), visibility="public", name=f"starred-{owner.id}")
        api(owner).post(f"/projects/{other.id}/star")
        lists = {
            f"/users/{owner.id}/projects": [mine.id],
            f"/users/{owner.id}/starred_projects": [other.id],
            f"/projects/{mine.id}/forks": [fork["id"]],
        }
        for path, expected in lists.items():
            assert sorted(p["id"] for p in api(viewer).get(path).json()) == expected, path
        kept.append(len(project_queries._LISTINGS._built))
    assert kept[1] == kept[0]


def test_starred_projects_of_a_user(api, make):
    u = make.user()
    p = make.project(visibility="public")
    make.project(visibility="public")
    api(u).post(f"/projects/{p.id}/star")
    assert [x["id"] for x in api().get(f"/users/{u.username}/starred_projects").json()] == [p.id]
    assert [x["id"] for x in api(u).get("/projects?starred=true").json()] == [p.id]
    assert api().get("/users/nobody-here/starred_projects").status_code == 404


# ------------------------------------------------------------------ lists


def test_anonymous_list_holds_public_projects_in_the_simple_view(api, make):
    pub = make.project(visibility="public")
    make.project(visibility="internal")
    make.project()
    r = api().get("/projects")
    assert [x["id"] for x in r.json()] == [pub.id]
    assert "permissions" not in r.json()[0]
    assert "archived" not in r.json()[0]


def test_signed_in_list_holds_public_internal_and_member_projects(api, make):
    u = make.user()
    pub = make.project(visibility="public")
    internal = make.project(visibility="internal")
    mine = make.project(members={u: GUEST})
    make.project()
    ids = [x["id"] for x in api(u).get("/projects?order_by=id&sort=asc").json()]
    assert ids == [pub.id, internal.id, mine.id]
    assert "permissions" in api(u).get("/projects").json()[0]


def test_admin_list_holds_every_project(api, make):
    ps = [make.project(), make.project(visibility="internal")]
    ids = [x["id"] for x in api("root").get("/projects?order_by=id&sort=asc").json()]
    assert ids == [p.id for p in ps]


def test_simple_list(api, make):
    u = make.user()
    make.project(owner=u)
    body = api(u).get("/projects?simple=true").json()[0]
    assert "permissions" not in body
    assert "visibility" in body
    assert "_links" not in body


def test_default_order_is_newest_first(api, make):
    u = make.user()
    a = make.project(owner=u)
    b = make.project(owner=u)
    assert [x["id"] for x in api(u).get("/projects").json()] == [b.id, a.id]


def test_order_by_name_ascending(api, make):
    u = make.user()
    b = make.project(owner=u, path="bbb")
    a = make.project(owner=u, path="aaa")
    assert [x["id"] for x in api(u).get("/projects?order_by=name&sort=asc").json()] == [a.id, b.id]


def test_invalid_order_by_is_400(api, make):
    r = api(make.user()).get("/projects?order_by=size")
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})


def test_owned_membership_and_min_access_level_filters(api, make):
    u = make.user()
    own = make.project(owner=u)
    dev = make.project(members={u: DEVELOPER})
    g = make.group(members={u: MAINTAINER})
    in_group = make.project(namespace=g)
    make.project(visibility="public")
    ids = lambda q: sorted(x["id"] for x in api(u).get(f"/projects?{q}").json())  # noqa: E731
    assert ids("owned=true") == [own.id]
    assert ids("membership=true") == sorted([own.id, dev.id, in_group.id])
    assert ids("min_access_level=40") == sorted([own.id, in_group.id])
    assert ids("min_access_level=30") == sorted([own.id, dev.id, in_group.id])


def test_invalid_min_access_level_is_400(api, make):
    r = api(make.user()).get("/projects?min_access_level=15")
    assert (r.status_code, r.json()) == (400, {"error": "min_access_level does not have a valid value"})


def test_visibility_and_search_filters(api, make):
    u = make.user()
    a = make.project(owner=u, path="alpha-tool", visibility="public")
    b = make.project(owner=u, path="beta", description="an alpha thing")
    ids = lambda q: sorted(x["id"] for x in api(u).get(f"/projects?{q}").json())  # noqa: E731
    assert ids("visibility=public") == [a.id]
    assert ids("search=ALPHA") == sorted([a.id, b.id])
    assert ids("search=nothing") == []


def test_search_namespaces(api, make):
    u = make.user()
    g = make.group(owners=[u], path="platform")
    p = make.project(namespace=g, path="api")
    make.project(owner=u, path="other")
    ids = lambda q: [x["id"] for x in api(u).get(f"/projects?{q}").json()]  # noqa: E731
    assert ids("search=platform") == []
    assert ids("search=platform&search_namespaces=true") == [p.id]
    assert ids("search=platform/ap&search_namespaces=true") == [p.id]


def test_id_and_last_activity_filters(api, make, db):
    u = make.user()
    a, b, c = (make.project(owner=u) for _ in range(3))
    ids = lambda q: sorted(x["id"] for x in api(u).get(f"/projects?{q}").json())  # noqa: E731
    assert ids(f"id_after={a.id}") == [b.id, c.id]
    assert ids(f"id_before={c.id}") == [a.id, b.id]
    old = datetime(2020, 1, 1, tzinfo=UTC)
    db.execute(update(Project).where(Project.id == a.id).values(last_activity_at=old))
    db.commit()
    assert ids("last_activity_before=2021-01-01T00:00:00Z") == [a.id]
    assert ids("last_activity_after=2021-01-01") == [b.id, c.id]


def test_topic_and_feature_filters(api, make):
    u = make.user()
    a = api(u).post("/projects", json={"name": "a", "topics": ["Go", "cli"]}).json()
    b = api(u).post("/projects", json={"name": "b", "topics": ["go"], "issues_enabled": False}).json()
    ids = lambda q: sorted(x["id"] for x in api(u).get(f"/projects?{q}").json())  # noqa: E731
    assert ids("topic=go") == sorted([a["id"], b["id"]])
    assert ids("topic=go,cli") == [a["id"]]
    assert ids("with_issues_enabled=true") == [a["id"]]


def test_with_programming_language_filter(api, make):
    u = make.user()
    py = make.project(owner=u, primary_language="Python")
    make.project(owner=u)
    assert [x["id"] for x in api(u).get("/projects?with_programming_language=python").json()] == [py.id]


def test_checksum_failure_filters_find_nothing(api, make):
    u = make.user()
    make.project(owner=u)
    assert api(u).get("/projects?repository_checksum_failed=true").json() == []
    assert api(u).get("/projects?wiki_checksum_failed=true").json() == []


def test_the_total_of_a_member_counts_open_projects_and_the_closed_ones_it_reaches_once_each(api, make, db):
    u, other = make.user(), make.user()
    group = make.group(members={u: DEVELOPER})
    subgroup = make.group(parent=group)
    sharing = make.group(members={u: REPORTER})
    make.project(owner=other, visibility="public", name="alpha-public")
    make.project(owner=other, visibility="internal", name="alpha-internal")
    make.project(owner=other, visibility="private", name="alpha-unreached")
    make.project(owner=other, visibility="private", name="alpha-member", members={u: REPORTER})
    make.project(namespace=group, visibility="private", name="alpha-in-group")
    make.project(owner=other, visibility="public", name="beta-public-member", members={u: DEVELOPER})
    make.project(owner=u, visibility="private", name="beta-own")
    make.project(namespace=subgroup, visibility="private", name="gamma-in-subgroup")
    shared = make.project(owner=other, visibility="private", name="gamma-shared")
    db.add(ProjectGroupLink(project_id=shared.id, group_id=sharing.id, group_access=DEVELOPER))
    db.commit()
    # One per page: the total is counted, not read off the last page.
    r = api(u).get("/projects?per_page=1")
    assert (r.headers["x-total"], r.headers["x-total-pages"]) == ("8", "8")
    r = api(u).get("/projects?per_page=1&search=alpha")
    assert r.headers["x-total"] == "4"
    r = api(u).get("/projects?per_page=1&visibility=private")
    assert r.headers["x-total"] == "5"
    r = api(make.user(external=True)).get("/projects?per_page=1")
    assert r.headers["x-total"] == "2"  # public ones only


def kept_counts(db) -> dict[str, int]:
    return {row.visibility: row.projects for row in db.scalars(select(ProjectVisibilityCount))}


def counted(db) -> dict[str, int]:
    rows = db.execute(select(Project.visibility, func.count()).group_by(Project.visibility))
    return dict(rows.all())


def test_the_kept_counts_follow_every_create_visibility_change_fork_and_delete(api, make, db):
    u = make.user()
    public = api(u).post("/projects", json={"name": "a", "visibility": "public"}).json()["id"]
    private = api(u).post("/projects", json={"name": "b", "visibility": "private"}).json()["id"]
    api(u).put(f"/projects/{private}", json={"visibility": "internal"})
    api(make.user()).post(f"/projects/{public}/fork")
    api(u).put(f"/projects/{public}", json={"description": "no visibility change"})
    assert api(u).delete(f"/projects/{private}").status_code == 202
    expected = {"public": 2, "internal": 0}
    assert {k: v for k, v in kept_counts(db).items() if v or k in expected} == expected
    assert {k: v for k, v in counted(db).items() if v} == {"public": 2}


def test_an_unfiltered_total_is_the_kept_count(api, make, db, runtime):
    """Anonymous, member and admin totals without filters are read off the kept counts (the
    statements say so), and match a count of the rows."""
    u = make.user()
    for visibility in ("public", "public", "internal", "private"):
        make.project(owner=make.user(), visibility=visibility)
    make.project(owner=u, visibility="private")
    assert counted(db) == {k: v for k, v in kept_counts(db).items() if v}
    totals = []
    for caller in (None, u, "root"):
        with recording(runtime.engine) as statements:
            r = api(caller).get("/projects?per_page=1")
        totals.append(r.headers["x-total"])
        assert any("project_visibility_counts" in sql for sql in statements), caller
    assert totals == ["2", "4", "5"]


def test_offset_pagination_headers(api, make):
    u = make.user()
    for _ in range(3):
        make.project(owner=u)
    r = api(u).get("/projects?per_page=2&owned=true")
    assert (r.headers["x-total"], r.headers["x-total-pages"], r.headers["x-next-page"]) == ("3", "2", "2")
    assert 'rel="next"' in r.headers["link"]
    r = api(u).head("/projects?per_page=2&owned=true")
    assert (r.status_code, r.headers["x-total"], r.content) == (200, "3", b"")


def test_keyset_pagination_by_id(api, make):
    u = make.user()
    ps = [make.project(owner=u) for _ in range(3)]
    r = api(u).get("/projects?pagination=keyset&order_by=id&sort=asc&per_page=2&owned=true")
    assert [x["id"] for x in r.json()] == [ps[0].id, ps[1].id]
    assert "x-total" not in r.headers
    link = r.headers["link"]
    assert f"id_after={ps[1].id}" in link
    assert 'rel="next"' in link
    nxt = link.split(";")[0].strip("<>").replace("http://kiln.test", "")
    r = api(u).get(nxt)
    assert [x["id"] for x in r.json()] == [ps[2].id]
    assert "link" not in r.headers


def test_keyset_pagination_with_another_order_is_405(api, make):
    r = api(make.user()).get("/projects?pagination=keyset&order_by=name")
    assert r.status_code == 405
    assert r.json() == {"error": "Keyset pagination is not yet available for this type of request"}


def test_projects_of_a_user(api, make):
    u = make.user()
    pub = make.project(owner=u, visibility="public")
    make.project(owner=u)  # private: only for those who can see it
    assert [x["id"] for x in api().get(f"/users/{u.id}/projects").json()] == [pub.id]
    assert len(api(u).get(f"/users/{u.username}/projects").json()) == 2
    r = api().get("/users/999999/projects")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


@pytest.mark.parametrize("ident", ["12345", "99999999999999999999"])
def test_digits_name_a_user_by_id_never_by_username(api, make, ident):
    """GitLab's UserFinder: a user named "12345" is not /users/12345 (nor is any user an id
    past 64 bits)."""
    named = make.user(username=ident)
    make.project(owner=named, visibility="public")
    r = api().get(f"/users/{ident}/projects")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_list_filters_are_validated(api, make):
    r = api(make.user()).get("/projects?archived=maybe")
    assert (r.status_code, r.json()) == (400, {"error": "archived is invalid"})
    r = api(make.user()).get("/projects?id_after=abc")
    assert r.status_code == 400


# ------------------------------------------------------------------ share


def test_share_with_a_group_gives_its_members_capped_access(api, make, db):
    owner, member = make.user(), make.user()
    g = make.group(owners=[owner], members={member: MAINTAINER})
    p = make.project(owner=owner)
    assert api(member).get(f"/projects/{p.id}").status_code == 404
    r = api(owner).post(f"/projects/{p.id}/share", json={"group_id": g.id, "group_access": REPORTER})
    assert r.status_code == 201
    link = r.json()
    assert {k: link[k] for k in ("project_id", "group_id", "group_access", "expires_at")} == {
        "project_id": p.id,
        "group_id": g.id,
        "group_access": REPORTER,
        "expires_at": None,
    }
    assert api(member).get(f"/projects/{p.id}").status_code == 200
    # Capped at the share's level: reporters can't update.
    assert api(member).put(f"/projects/{p.id}", json={"description": "x"}).status_code == 403
    shared = api(owner).get(f"/projects/{p.id}").json()["shared_with_groups"]
    assert shared == [
        {
            "group_id": g.id,
            "group_name": g.name,
            "group_full_path": g.full_path,
            "group_access_level": REPORTER,
            "expires_at": None,
        }
    ]
    assert api(member).get(f"/projects?min_access_level={REPORTER}").json()[0]["id"] == p.id


def test_share_twice_is_409(api, make):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(owner=u)
    api(u).post(f"/projects/{p.id}/share", json={"group_id": g.id, "group_access": GUEST})
    r = api(u).post(f"/projects/{p.id}/share", json={"group_id": g.id, "group_access": GUEST})
    assert (r.status_code, r.json()) == (409, {"message": "Project already shared with this group"})


def test_share_with_an_unknown_or_hidden_group_is_404(api, make):
    u = make.user()
    p = make.project(owner=u)
    hidden = make.group()
    for gid in (999999, hidden.id):
        r = api(u).post(f"/projects/{p.id}/share", json={"group_id": gid, "group_access": GUEST})
        assert (r.status_code, r.json()) == (404, {"message": "Not Found"})


def test_share_with_the_projects_own_group_is_409(api, make):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(namespace=g)
    r = api(u).post(f"/projects/{p.id}/share", json={"group_id": g.id, "group_access": GUEST})
    assert (r.status_code, r.json()) == (
        409,
        {"message": "Project cannot be shared with the group it is in or one of its ancestors."},
    )


def test_share_locked_by_the_group_is_400(api, make):
    u = make.user()
    g = make.group(owners=[u], share_with_group_lock=True)
    other = make.group(owners=[u])
    p = make.project(namespace=g)
    r = api(u).post(f"/projects/{p.id}/share", json={"group_id": other.id, "group_access": GUEST})
    assert (r.status_code, r.json()) == (400, {"message": "The project sharing with group is disabled"})


def test_share_parameters_are_validated(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).post(f"/projects/{p.id}/share", json={"group_id": 1})
    assert (r.status_code, r.json()) == (400, {"error": "group_access is missing"})
    r = api(u).post(f"/projects/{p.id}/share", json={"group_id": 1, "group_access": 15})
    assert (r.status_code, r.json()) == (400, {"error": "group_access does not have a valid value"})


def test_developers_cannot_share(api, make):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(members={u: DEVELOPER})
    r = api(u).post(f"/projects/{p.id}/share", json={"group_id": g.id, "group_access": GUEST})
    assert r.status_code == 403


def test_unshare(api, make, db):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(owner=u)
    api(u).post(f"/projects/{p.id}/share", json={"group_id": g.id, "group_access": GUEST})
    assert api(u).delete(f"/projects/{p.id}/share/{g.id}").status_code == 204
    assert db.scalars(select(ProjectGroupLink)).all() == []
    r = api(u).delete(f"/projects/{p.id}/share/{g.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Link Not Found"})


# ------------------------------------------------------------------ uploads


def test_upload_answers_the_spec_fields_and_serves_the_file_back(api, make):
    u = make.user()
    p = make.project(owner=u, visibility="public")
    r = api(u).post(f"/projects/{p.id}/uploads", files={"file": ("shot.png", b"\x89PNG fake")})
    assert r.status_code == 201
    body = r.json()
    secret = body["url"].split("/")[2]
    assert len(secret) == 32
    assert body == {
        "id": body["id"],
        "alt": "shot",
        "url": f"/uploads/{secret}/shot.png",
        "full_path": f"/-/project/{p.id}/uploads/{secret}/shot.png",
        "markdown": f"![shot](/uploads/{secret}/shot.png)",
    }
    by_full_path = api().get(body["full_path"])
    assert (by_full_path.status_code, by_full_path.content) == (200, b"\x89PNG fake")
    assert by_full_path.headers["content-type"] == "image/png"
    relative = api().client.get(f"/{u.username}/{p.path}{body['url']}")
    assert (relative.status_code, relative.content) == (200, b"\x89PNG fake")


def test_upload_of_a_non_image_links_by_filename(api, make):
    u = make.user()
    p = make.project(owner=u)
    body = api(u).post(f"/projects/{p.id}/uploads", files={"file": ("notes.txt", b"x")}).json()
    assert body["alt"] == "notes.txt"
    assert body["markdown"] == f"[notes.txt]({body['url']})"


def test_upload_without_a_file_is_400(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).post(f"/projects/{p.id}/uploads", data={"x": "1"})
    assert (r.status_code, r.json()) == (400, {"error": "file is missing"})


def test_upload_above_the_attachment_limit_is_413_and_stores_nothing(api, make, db, settings):
    instance_settings.update(db, {"max_attachment_size": 1})
    u = make.user()
    p = make.project(owner=u)
    r = api(u).post(f"/projects/{p.id}/uploads", files={"file": ("big.bin", b"x" * (1024 * 1024 + 1))})
    assert (r.status_code, r.json()) == (413, {"message": "413 Request Entity Too Large"})
    assert not (settings.data_dir / "uploads" / "project" / str(p.id)).exists()


def test_uploads_of_a_private_project_are_hidden_from_others(api, make):
    u = make.user()
    p = make.project(owner=u)
    body = api(u).post(f"/projects/{p.id}/uploads", files={"file": ("a.txt", b"secret")}).json()
    assert api(u).get(body["full_path"]).status_code == 200
    assert api(make.user()).get(body["full_path"]).status_code == 404
    assert api().get(body["full_path"]).status_code == 404
    wrong = body["full_path"].replace(body["url"].split("/")[2], "0" * 32)
    assert api(u).get(wrong).status_code == 404


def test_upload_needs_authentication(api, make):
    p = make.project(visibility="public")
    assert api().post(f"/projects/{p.id}/uploads", files={"file": ("a.txt", b"x")}).status_code == 401


def test_upload_counts_in_statistics(api, make):
    u = make.user()
    p = make.project(owner=u)
    api(u).post(f"/projects/{p.id}/uploads", files={"file": ("a.txt", b"12345")})
    stats = api(u).get(f"/projects/{p.id}?statistics=true").json()["statistics"]
    assert (stats["uploads_size"], stats["storage_size"]) == (5, 5)


# ------------------------------------------------------------------ languages


def test_languages_of_a_project_without_a_repository_are_empty(api, make):
    p = make.project(visibility="public")
    r = api().get(f"/projects/{p.id}/languages")
    assert (r.status_code, r.json()) == (200, {})
    assert api().get(f"/projects/{make.project().id}/languages").status_code == 404


def test_membership_rows_of_a_deleted_project_are_gone(api, make, db):
    u, v = make.user(), make.user()
    p = make.project(owner=u, members={v: DEVELOPER})
    api(v).post(f"/projects/{p.id}/star")
    api(u).delete(f"/projects/{p.id}")
    assert db.scalars(select(Member).where(Member.project_id == p.id)).all() == []
    assert db.scalars(select(ProjectStar).where(ProjectStar.project_id == p.id)).all() == []


def test_default_branch_must_exist_and_moves_head(api, make, settings):
    u = make.user()
    p = api(u).post("/projects", json={"name": "x", "initialize_with_readme": True}).json()
    r = api(u).put(f"/projects/{p['id']}", json={"default_branch": "nope"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"base": ["Could not change HEAD: branch 'nope' does not exist"]}},
    )
    api(u).post(f"/projects/{p['id']}/repository/branches", json={"branch": "dev", "ref": "main"})
    r = api(u).put(f"/projects/{p['id']}", json={"default_branch": "dev"})
    assert (r.status_code, r.json()["default_branch"]) == (200, "dev")
    from kiln.services.repositories import store

    assert store(settings).open(p["id"]).head.shorthand == "dev"


def test_starrers_search_takes_wildcards_literally(api, make):
    u = make.user()
    p = make.project(visibility="public")
    api(u).post(f"/projects/{p.id}/star")
    assert len(api().get(f"/projects/{p.id}/starrers?search=user").json()) == 1
    assert api().get(f"/projects/{p.id}/starrers?search=%25").json() == []


def test_the_same_list_for_two_callers_shows_each_their_own_projects(api, make):
    """A list's statement is shared by callers of the same kind; what is theirs is not."""
    ada, bob = make.user(), make.user()
    mine, theirs = make.project(owner=ada), make.project(owner=bob)
    for caller, own, other in ((ada, mine, theirs), (bob, theirs, mine), (ada, mine, theirs)):
        ids = [p["id"] for p in api(caller).get("/projects?membership=true&simple=true").json()]
        assert own.id in ids
        assert other.id not in ids


def test_starred_lists_each_callers_own_stars(api, make):
    """The list's statement is kept: its third run is compiled, and still each caller's own."""
    ada, bob = make.user(), make.user()
    one, two = make.project(visibility="public"), make.project(visibility="public")
    api(ada).post(f"/projects/{one.id}/star")
    api(bob).post(f"/projects/{two.id}/star")
    for caller, starred in ((ada, one), (bob, two), (ada, one)):
        assert [p["id"] for p in api(caller).get("/projects?starred=true").json()] == [starred.id]


def test_a_deleted_projects_id_is_never_handed_out_again(api, make, drain):
    """A project's id names its repository and uploads, removed by a job after the delete:
    a new project must not take the id (and so the path) of the newest deleted one, whose
    removal would then take the new project's repository with it."""
    owner = make.user()
    caller = api(owner)
    first = caller.post("/projects", json={"name": "first", "initialize_with_readme": True}).json()
    assert caller.delete(f"/projects/{first['id']}").status_code == 202
    second = caller.post("/projects", json={"name": "second", "initialize_with_readme": True}).json()
    assert second["id"] > first["id"]
    drain()
    readme = caller.get(f"/projects/{second['id']}/repository/files/README.md/raw?ref=main")
    assert readme.status_code == 200, readme.text
    assert readme.text == "# second\n"


def test_a_description_longer_than_gitlab_allows_is_refused_on_create_and_update(api, make):
    u = make.user()
    r = api(u).post("/projects", json={"name": "long-description", "description": "x" * 2001})
    assert r.status_code == 400
    assert r.json() == {"message": {"description": ["is too long (maximum is 2000 characters)"]}}
    p = api(u).post("/projects", json={"name": "long-description", "description": "x" * 2000}).json()
    assert p["description"] == "x" * 2000
    r = api(u).put(f"/projects/{p['id']}", json={"description": "y" * 2001})
    assert r.status_code == 400
    assert api(u).get(f"/projects/{p['id']}").json()["description"] == "x" * 2000


# ------------------------------------------------------------------ permissions of owners


def test_the_creator_of_a_personal_project_holds_owner_access(api, make):
    u = make.user()
    created = api(u).post("/projects", json={"name": "mine"}).json()
    perms = api(u).get(f"/projects/{created['id']}").json()["permissions"]
    assert perms == {"project_access": {"access_level": OWNER, "notification_level": 3}, "group_access": None}
    listed = api(u).get("/projects?owned=true").json()
    assert [p["permissions"]["project_access"]["access_level"] for p in listed] == [OWNER]


def test_other_callers_see_no_project_access_on_someone_elses_public_project(api, make):
    owner, other = make.user(), make.user()
    p = make.project(owner=owner, visibility="public")
    assert api(other).get(f"/projects/{p.id}").json()["permissions"] == {
        "project_access": None,
        "group_access": None,
    }


def test_a_group_projects_permissions_are_the_group_owners_group_access(api, make):
    u = make.user()
    g = make.group(owners=[u])
    created = api(u).post("/projects", json={"name": "in-group", "namespace_id": g.id}).json()
    perms = api(u).get(f"/projects/{created['id']}").json()["permissions"]
    assert perms == {"project_access": None, "group_access": {"access_level": OWNER, "notification_level": 3}}


# ------------------------------------------------------------------ the groups of a project


def group_ids(r) -> list[int]:
    assert r.status_code == 200, r.text
    return [g["id"] for g in r.json()]


def test_a_projects_groups_are_its_group_and_ancestors_newest_first(api, make):
    u = make.user()
    top = make.group(path="pg-top", owners=[u])
    sub = make.group(path="pg-sub", parent=top)
    p = make.project(namespace=sub)
    r = api(u).get(f"/projects/{p.id}/groups")
    assert group_ids(r) == [sub.id, top.id]
    assert r.json()[0] == {
        "id": sub.id,
        "web_url": "http://kiln.test/groups/pg-top/pg-sub",
        "name": "pg-sub",
        "avatar_url": None,
        "full_name": "pg-top / pg-sub",
        "full_path": "pg-top/pg-sub",
    }


def test_a_personal_project_has_no_groups_unless_shared(api, make):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(owner=u)
    assert group_ids(api(u).get(f"/projects/{p.id}/groups")) == []
    api(u).post(f"/projects/{p.id}/share", json={"group_id": g.id, "group_access": DEVELOPER})
    assert group_ids(api(u).get(f"/projects/{p.id}/groups")) == []
    assert group_ids(api(u).get(f"/projects/{p.id}/groups?with_shared=true")) == [g.id]


def test_project_groups_filters(api, make, db):
    u = make.user()
    top = make.group(path="flt-top", owners=[u])
    sub = make.group(path="flt-sub", parent=top)
    low = make.group(path="flt-low", owners=[u])
    high = make.group(path="flt-high", owners=[u])
    p = make.project(namespace=sub)
    db.add(ProjectGroupLink(project_id=p.id, group_id=low.id, group_access=REPORTER))
    db.add(ProjectGroupLink(project_id=p.id, group_id=high.id, group_access=MAINTAINER))
    db.commit()
    base = f"/projects/{p.id}/groups"
    assert group_ids(api(u).get(f"{base}?with_shared=true")) == [high.id, low.id, sub.id, top.id]
    assert group_ids(api(u).get(f"{base}?with_shared=true&shared_min_access_level=30")) == [
        high.id,
        sub.id,
        top.id,
    ]
    assert group_ids(
        api(u).get(f"{base}?with_shared=true&skip_groups[]={top.id}&skip_groups[]={low.id}")
    ) == [
        high.id,
        sub.id,
    ]
    assert group_ids(api(u).get(f"{base}?with_shared=true&search=HIGH")) == [high.id]
    assert group_ids(api(u).get(f"{base}?search=sub")) == [sub.id]


def test_shared_visible_only_leaves_out_shared_groups_the_caller_cannot_see(api, make, db):
    owner, dev = make.user(), make.user()
    p = make.project(owner=owner, visibility="public", members={dev: DEVELOPER})
    hidden = make.group(path="svo-hidden")
    mine = make.group(path="svo-mine", members={dev: GUEST})
    public = make.group(path="svo-public", visibility="public")
    for g in (hidden, mine, public):
        db.add(ProjectGroupLink(project_id=p.id, group_id=g.id, group_access=REPORTER))
    db.commit()
    base = f"/projects/{p.id}/groups?with_shared=true"
    assert group_ids(api(dev).get(base)) == [public.id, mine.id, hidden.id]
    assert group_ids(api(dev).get(f"{base}&shared_visible_only=true")) == [public.id, mine.id]
    assert group_ids(api().get(f"{base}&shared_visible_only=true")) == [public.id]


def test_project_groups_are_paginated(api, make):
    u = make.user()
    top = make.group(owners=[u])
    mid = make.group(parent=top)
    sub = make.group(parent=mid)
    p = make.project(namespace=sub)
    r = api(u).get(f"/projects/{p.id}/groups?per_page=2")
    assert group_ids(r) == [sub.id, mid.id]
    assert r.headers["x-total"] == "3"
    assert r.headers["x-next-page"] == "2"
    assert group_ids(api(u).get(f"/projects/{p.id}/groups?per_page=2&page=2")) == [top.id]


@pytest.mark.parametrize(
    ("caller", "visibility", "status"),
    [
        ("anonymous", "public", 200),
        ("anonymous", "private", 404),
        ("stranger", "internal", 200),
        ("stranger", "private", 404),
        ("guest", "private", 200),
        ("admin", "private", 200),
    ],
)
def test_project_groups_are_for_whoever_may_read_the_project(api, make, caller, visibility, status):
    guest = make.user()
    g = make.group(visibility="public" if visibility != "private" else "private")
    p = make.project(namespace=g, visibility=visibility, members={guest: GUEST})
    who = {"anonymous": None, "stranger": make.user(), "guest": guest, "admin": "root"}[caller]
    r = api(who).get(f"/projects/{p.id}/groups")
    assert r.status_code == status
    if status == 404:
        assert r.json() == {"message": "404 Project Not Found"}


def test_project_groups_cost_the_same_whatever_their_number(api, make, db, runtime):
    u = make.user()
    parent = make.group(owners=[u])
    p = make.project(namespace=parent)

    def grow(n: int) -> None:
        for _ in range(n):
            g = make.group(owners=[u])
            db.add(ProjectGroupLink(project_id=p.id, group_id=g.id, group_access=REPORTER))
        db.commit()

    def cost() -> int:
        # The least of two runs: the instance's settings are read again now and then.
        return min(count(runtime, lambda: api(u).get(path)) for _ in range(2))

    path = f"/projects/{p.id}/groups?with_shared=true&shared_visible_only=true&per_page=3"
    grow(4)
    few = cost()
    grow(10)
    assert cost() == few
    assert few <= 4  # the token, the project, the page, its count
