"""GET /projects/:id/languages: shares by bytes of the default branch, cached per commit."""

from __future__ import annotations

import pygit2
from sqlalchemy import func, select, update

from kiln import jobs
from kiln.db import transaction
from kiln.git.writes import FileAction, Person, commit_actions
from kiln.models import Job, Project
from kiln.services import languages as language_service
from kiln.services.repositories import store

ALICE = Person("Alice", "alice@example.com")


def new_project(api, owner, name="demo", **fields):
    r = api(owner).post("/projects", json={"name": name, "initialize_with_readme": True, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def write(settings, project_id, files: dict[str, bytes], branch="main") -> str:
    repo = store(settings).open(project_id)
    commit, _ = commit_actions(
        repo,
        branch=branch,
        actions=[FileAction("create", path, data) for path, data in files.items()],
        message="Add files",
        author=ALICE,
        committer=ALICE,
    )
    return str(commit.id)


def languages(api, caller, project_id):
    return api(caller).get(f"/projects/{project_id}/languages")


def readme_size(db, project_id) -> int:
    return len(f"# {db.get(Project, project_id).name}\n".encode())


def test_shares_are_percentages_by_bytes_largest_first(api, make, db, settings):
    u = make.user()
    p = new_project(api, u)
    md = readme_size(db, p["id"])
    py = 3 * md
    write(settings, p["id"], {"app.py": b"x" * py})
    r = languages(api, u, p["id"])
    assert r.status_code == 200
    assert list(r.json().items()) == [("Python", 75.0), ("Markdown", 25.0)]


def test_shares_are_rounded_to_two_decimals_and_sum_to_about_100(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    write(settings, p["id"], {"a.py": b"p" * 1000, "b.rb": b"r" * 333, "c.go": b"g" * 77})
    body = languages(api, u, p["id"]).json()
    assert set(body) == {"Python", "Ruby", "Go", "Markdown"}
    assert all(round(v, 2) == v for v in body.values())
    assert abs(sum(body.values()) - 100) < 0.05


def test_vendored_binary_and_unknown_files_do_not_count(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    write(
        settings,
        p["id"],
        {
            "lib.py": b"print(1)\n",
            "node_modules/dep/index.js": b"x" * 5000,
            "vendor/thing.rb": b"x" * 5000,
            "static/app.min.js": b"x" * 5000,
            "blob.py": b"\x00binary" * 100,
            "data.bin": b"y" * 5000,
            "notes.unknownext": b"z" * 5000,
        },
    )
    assert set(languages(api, u, p["id"]).json()) == {"Python", "Markdown"}


def test_well_known_file_names_have_a_language(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    write(settings, p["id"], {"Dockerfile": b"FROM x\n" * 100, "Makefile": b"all:\n" * 100})
    assert set(languages(api, u, p["id"]).json()) == {"Dockerfile", "Makefile", "Markdown"}


def test_a_readme_only_project_is_all_markdown(api, make):
    u = make.user()
    p = new_project(api, u)
    assert languages(api, u, p["id"]).json() == {"Markdown": 100.0}


def test_empty_repository_has_no_languages(api, make):
    u = make.user()
    p = api(u).post("/projects", json={"name": "empty"}).json()
    r = languages(api, u, p["id"])
    assert (r.status_code, r.json()) == (200, {})


def test_result_is_cached_for_the_commit(api, make, db, settings):
    u = make.user()
    p = new_project(api, u)
    sha = write(settings, p["id"], {"app.py": b"print(1)\n"})
    first = languages(api, u, p["id"]).json()
    db.expire_all()
    row = db.get(Project, p["id"])
    assert (row.languages, row.languages_sha, row.primary_language) == (first, sha, "Python")
    # A cached answer for the same commit is served as stored, not computed again.
    db.execute(update(Project).where(Project.id == p["id"]).values(languages={"Cached": 100.0}))
    db.commit()
    assert languages(api, u, p["id"]).json() == {"Cached": 100.0}


def test_a_new_commit_on_the_default_branch_recomputes(api, make, db, settings):
    u = make.user()
    p = new_project(api, u)
    languages(api, u, p["id"])
    sha = write(settings, p["id"], {"main.go": b"package main\n" * 50})
    body = languages(api, u, p["id"]).json()
    assert next(iter(body)) == "Go"
    db.expire_all()
    assert (db.get(Project, p["id"]).languages_sha, db.get(Project, p["id"]).primary_language) == (sha, "Go")


def test_other_branches_do_not_count(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    repo = store(settings).open(p["id"])
    commit_actions(
        repo,
        branch="topic",
        actions=[FileAction("create", "x.rs", b"fn main() {}\n" * 40)],
        message="Rust",
        author=ALICE,
        committer=ALICE,
        start=repo.revparse_single("main").peel(pygit2.Commit),
    )
    assert languages(api, u, p["id"]).json() == {"Markdown": 100.0}


def test_computing_languages_does_not_touch_updated_at(api, make, db, settings):
    u = make.user()
    p = new_project(api, u)
    write(settings, p["id"], {"app.py": b"print(1)\n"})
    db.expire_all()
    before = db.get(Project, p["id"]).updated_at
    languages(api, u, p["id"])
    db.expire_all()
    assert db.get(Project, p["id"]).updated_at == before


def test_with_programming_language_finds_projects_once_computed(api, make, settings):
    u = make.user()
    p = new_project(api, u, name="pyproj")
    other = new_project(api, u, name="other")
    write(settings, p["id"], {"app.py": b"x" * 1000})
    languages(api, u, p["id"])
    languages(api, u, other["id"])
    r = api(u).get("/projects", params={"with_programming_language": "python", "owned": "true"})
    assert (r.status_code, [x["id"] for x in r.json()]) == (200, [p["id"]])
    r = api(u).get("/projects", params={"with_programming_language": "Markdown", "owned": "true"})
    assert [x["id"] for x in r.json()] == [other["id"]]


def test_languages_of_a_public_project_are_public(api, make):
    u = make.user()
    p = new_project(api, u, visibility="public")
    assert languages(api, None, p["id"]).status_code == 200


def test_languages_of_a_private_project_are_hidden(api, make, db):
    u = make.user()
    p = new_project(api, u)
    r = languages(api, None, p["id"])
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    guest = make.user()
    make.member(db.get(Project, p["id"]), guest, 10)
    r = languages(api, guest, p["id"])
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_the_same_directory_twice_counts_twice(api, make, db, settings):
    u = make.user()
    p = new_project(api, u)
    md = readme_size(db, p["id"])
    write(settings, p["id"], {"x/app.py": b"p" * md, "y/app.py": b"p" * md})
    repo = store(settings).open(p["id"])
    assert repo.revparse_single("main:x").id == repo.revparse_single("main:y").id
    assert languages(api, u, p["id"]).json() == {"Python": 66.67, "Markdown": 33.33}


def test_a_blob_over_the_instances_large_blob_bytes_does_not_count(api, make, settings, configure):
    u = make.user()
    p = new_project(api, u)
    configure(large_blob_bytes=100)
    write(settings, p["id"], {"big.py": b"p" * 101, "small.rb": b"r" * 100})
    assert set(languages(api, u, p["id"]).json()) == {"Ruby", "Markdown"}


def test_past_max_tree_entries_the_shares_are_those_of_the_files_counted(api, make, db, settings, configure):
    u = make.user()
    p = new_project(api, u)
    md = readme_size(db, p["id"])
    write(settings, p["id"], {"a.py": b"p" * md, "b.rb": b"r" * md})
    configure(max_tree_entries=2)  # README.md, then a.py, in git's order
    assert languages(api, u, p["id"]).json() == {"Markdown": 50.0, "Python": 50.0}


# ---------------------------------------------------------------------------- after a push


def push_bookkeeping(db, project_id: int, ref: str, after: str) -> None:
    """What a push's transaction does for languages (kiln.services.git_http.record_push)."""
    with transaction(db):
        language_service.after_push(db, db.get(Project, project_id), ref, after)


def detection_jobs(db, since: int = 0) -> list[Job]:
    """The languages' jobs enqueued after job `since` (a project's first commit enqueues one)."""
    return list(db.scalars(select(Job).where(Job.kind == language_service.DETECT, Job.id > since)))


def last_job(db) -> int:
    return db.scalar(select(func.max(Job.id))) or 0


def test_the_job_computes_languages_without_anyone_asking(api, make, db, settings, drain):
    u = make.user()
    p = new_project(api, u)
    since = last_job(db)
    sha = write(settings, p["id"], {"app.py": b"x" * 1000})
    push_bookkeeping(db, p["id"], "refs/heads/main", sha)
    drain()
    r = api(u).get("/projects", params={"with_programming_language": "Python", "owned": "true"})
    assert [x["id"] for x in r.json()] == [p["id"]]
    db.expire_all()
    assert [j.state for j in detection_jobs(db, since)] == ["done"]
    assert db.get(Project, p["id"]).languages_sha == sha


def test_the_job_is_enqueued_with_the_push_or_not_at_all(api, make, db, settings):
    u = make.user()
    p = new_project(api, u)
    since = last_job(db)
    sha = write(settings, p["id"], {"app.py": b"x"})
    try:
        with transaction(db):
            language_service.after_push(db, db.get(Project, p["id"]), "refs/heads/main", sha)
            raise RuntimeError("the push's bookkeeping failed")
    except RuntimeError:
        pass
    assert detection_jobs(db, since) == []


def test_only_the_default_branch_moving_to_a_commit_enqueues(api, make, db, settings):
    u = make.user()
    p = new_project(api, u)
    since = last_job(db)
    sha = write(settings, p["id"], {"app.py": b"x"})
    push_bookkeeping(db, p["id"], "refs/heads/topic", sha)
    push_bookkeeping(db, p["id"], "refs/tags/main", sha)
    push_bookkeeping(db, p["id"], "refs/heads/main", "0" * 40)
    assert detection_jobs(db, since) == []


def test_the_job_runs_again_harmlessly(api, make, db, settings, drain):
    u = make.user()
    p = new_project(api, u)
    since = last_job(db)
    sha = write(settings, p["id"], {"app.py": b"x" * 1000})
    push_bookkeeping(db, p["id"], "refs/heads/main", sha)
    push_bookkeeping(db, p["id"], "refs/heads/main", sha)
    drain()
    db.expire_all()
    assert [j.state for j in detection_jobs(db, since)] == ["done", "done"]
    assert languages(api, u, p["id"]).json()["Python"] > 90


def test_the_job_of_a_project_removed_meanwhile_does_nothing(db, drain):
    with transaction(db):
        jobs.enqueue(db, language_service.DETECT, {"project_id": 987654})
    drain()
    db.expire_all()
    assert [(j.state, j.last_error) for j in detection_jobs(db)] == [("done", None)]


def test_a_commit_through_the_api_computes_languages_without_anyone_asking(api, make, db, drain):
    u = make.user()
    p = new_project(api, u)
    r = api(u).post(
        f"/projects/{p['id']}/repository/commits",
        json={
            "branch": "main",
            "commit_message": "add code",
            "actions": [{"action": "create", "file_path": "app.py", "content": "x = 1\n" * 200}],
        },
    )
    assert r.status_code == 201, r.text
    drain()
    found = api(u).get("/projects", params={"with_programming_language": "Python", "owned": "true"})
    assert [x["id"] for x in found.json()] == [p["id"]]
    db.expire_all()
    assert db.get(Project, p["id"]).languages_sha == r.json()["id"]
