"""Git smart HTTP at the HTTP level: content types, GitLab's authentication answers (401
challenge, 404 for hidden projects, 403 with git's messages), and receive-pack refusals
written as git's own report, for the cases a real `git` (tests/e2e) can't easily produce."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import struct
from datetime import date, timedelta

import pytest
from sqlalchemy import func, select

from kiln.db import transaction
from kiln.git.refs import update_ref
from kiln.git.writes import FileAction, Person, commit_actions
from kiln.models import Event, Job, Project, ProtectedBranch
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.services import instance_settings, languages
from kiln.services.repositories import store
from tests.conftest import ROOT_PASSWORD

ZERO = "0" * 40
CHALLENGE = 'Basic realm="GitLab"'
ACCESS_DENIED = (
    "HTTP Basic: Access denied. If a password was provided for Git authentication, the password was "
    "incorrect or you're required to use a token instead of a password. If a token was provided, it "
    "was either incorrect, expired, or improperly scoped.\n"
)
HTTP_NOT_ALLOWED = "Git access over HTTP is not allowed\n"
NOT_FOUND = "The project you were looking for could not be found or you don't have permission to view it.\n"
NO_CACHE = {
    "expires": "Fri, 01 Jan 1980 00:00:00 GMT",
    "pragma": "no-cache",
    "cache-control": "no-cache, max-age=0, must-revalidate",
}
UPLOAD_REQUEST = {"Content-Type": "application/x-git-upload-pack-request"}
RECEIVE_REQUEST = {"Content-Type": "application/x-git-receive-pack-request"}


# ---------------------------------------------------------------------------- helpers


def basic(username: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{secret}".encode()).decode()}


def pkt(line: str | bytes) -> bytes:
    data = line.encode() if isinstance(line, str) else line
    return f"{len(data) + 4:04x}".encode() + data


def new_project(api, owner, **fields):
    body = {"name": f"git-{os.urandom(4).hex()}", "initialize_with_readme": True, **fields}
    r = api(owner).post("/projects", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def add_member(api, project, user, level: int) -> None:
    r = api("root").post(
        f"/projects/{project['id']}/members", json={"user_id": user.id, "access_level": level}
    )
    assert r.status_code == 201, r.text


def refs_url(project, service: str, suffix: str = ".git") -> str:
    return f"/{project['path_with_namespace']}{suffix}/info/refs?service={service}"


def rpc_url(project, service: str) -> str:
    return f"/{project['path_with_namespace']}.git/{service}"


def head_of(settings, project, branch: str = "main") -> str:
    return str(store(settings).open(project["id"]).references[f"refs/heads/{branch}"].target)


def add_branch(settings, project, name: str) -> str:
    sha = head_of(settings, project)
    update_ref(store(settings).path(project["id"]), f"refs/heads/{name}", sha, None, "test setup")
    return sha


def push_request(
    *commands: tuple[str, str, str], caps: str = "report-status side-band-64k", options: tuple[str, ...] = ()
) -> bytes:
    """A receive-pack request of ref commands only (deletions need no pack), and the push
    options after them when there are any."""
    lines = [f"{old} {new} {ref}" for old, new, ref in commands]
    lines[0] += f"\0{caps}" + (" push-options" if options else "")
    body = b"".join(pkt(line + "\n") for line in lines) + b"0000"
    return body + b"".join(pkt(option) for option in options) + b"0000" if options else body


def demux(body: bytes) -> tuple[bytes, bytes]:
    """(report, progress): the side-band channels of a receive-pack answer."""
    report, progress, pos = b"", b"", 0
    while pos < len(body):
        size = int(body[pos : pos + 4], 16)
        if size == 0:
            pos += 4
            continue
        band, data = body[pos + 4], body[pos + 5 : pos + size]
        if band == 1:
            report += data
        elif band == 2:
            progress += data
        pos += size
    return report, progress


def pkt_lines(data: bytes) -> list[bytes]:
    lines, pos = [], 0
    while pos < len(data):
        size = int(data[pos : pos + 4], 16)
        lines.append(b"" if size == 0 else data[pos + 4 : pos + size])
        pos += max(size, 4)
    return lines


# ---------------------------------------------------------------------------- info/refs


def test_anonymous_advertisement_of_a_public_project(api, client, make, settings):
    project = new_project(api, make.user(), visibility="public")
    r = client.get(refs_url(project, "git-upload-pack"))
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-git-upload-pack-advertisement"
    assert {k: r.headers[k] for k in NO_CACHE} == NO_CACHE
    assert r.content.startswith(b"001e# service=git-upload-pack\n0000")
    first = pkt_lines(r.content)[2]
    assert first.startswith(f"{head_of(settings, project)} HEAD\0".encode())
    assert b"symref=HEAD:refs/heads/main" in first
    assert r.content.endswith(b"0000")


def test_advertisement_without_dot_git(api, client, make):
    project = new_project(api, make.user(), visibility="public")
    r = client.get(refs_url(project, "git-upload-pack", suffix=""))
    assert (r.status_code, r.content[:34]) == (200, b"001e# service=git-upload-pack\n0000")


def test_protocol_v2_advertisement_has_no_service_header(api, client, make):
    project = new_project(api, make.user(), visibility="public")
    r = client.get(refs_url(project, "git-upload-pack"), headers={"Git-Protocol": "version=2"})
    assert r.status_code == 200
    assert r.content.startswith(b"000eversion 2\n")
    assert b"ls-refs" in r.content


def test_receive_pack_advertisement_for_a_developer(api, client, make, settings):
    owner, dev = make.user(), make.user()
    project = new_project(api, owner)
    add_member(api, project, dev, DEVELOPER)
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic("anyone", dev.token))
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-git-receive-pack-advertisement"
    assert r.content.startswith(b"001f# service=git-receive-pack\n0000")
    assert pkt_lines(r.content)[2].startswith(f"{head_of(settings, project)} refs/heads/main\0".encode())


# ---------------------------------------------------------------------------- authentication


def test_anonymous_push_to_a_public_project_is_challenged(api, client, make):
    project = new_project(api, make.user(), visibility="public")
    r = client.get(refs_url(project, "git-receive-pack"))
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)
    assert r.headers["content-type"] == "text/plain; charset=utf-8"


@pytest.mark.parametrize("visibility", ["private", "internal"])
def test_anonymous_clone_of_a_non_public_project_is_challenged(api, client, make, visibility):
    project = new_project(api, make.user(), visibility=visibility)
    r = client.get(refs_url(project, "git-upload-pack"))
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


def test_anonymous_request_for_a_missing_project_is_challenged_not_404(client, db):
    r = client.get("/nobody/nothing.git/info/refs?service=git-upload-pack")
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


def test_wrong_password_is_challenged(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic(owner.username, "wrong-password"))
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


@pytest.mark.parametrize(
    "authorization",
    [b"Basic \xe9\xe9\xe9\xe9", b"Basic \xc3\xa9t\xc3\xa9", b"Basic not*base64", b"Basic /w=="],
)
def test_basic_credentials_that_do_not_decode_are_challenged(api, client, make, authorization):
    # Characters other than ASCII make base64 raise a plain ValueError: the same 401 as any
    # other undecodable header, never a 500.
    project = new_project(api, make.user())
    r = client.get(refs_url(project, "git-upload-pack"), headers={"Authorization": authorization})
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


def test_username_and_password_authenticate(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic(owner.username, owner.password))
    assert r.status_code == 200, r.text


def test_email_and_password_authenticate(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic(owner.email, owner.password))
    assert r.status_code == 200, r.text


def test_personal_access_token_with_any_username(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("whoever", owner.token))
    assert r.status_code == 200, r.text


def test_oauth_token_with_oauth2_username(api, client, make):
    project = new_project(api, "root")
    grant = client.post(
        "/oauth/token", data={"grant_type": "password", "username": "root", "password": ROOT_PASSWORD}
    )
    assert grant.status_code == 200, grant.text
    r = client.get(
        refs_url(project, "git-receive-pack"), headers=basic("oauth2", grant.json()["access_token"])
    )
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("kind", ["expired", "revoked"])
def test_expired_or_revoked_token_is_challenged(api, client, make, kind):
    owner = make.user()
    project = new_project(api, owner)
    if kind == "expired":
        token = make.token(owner, expires_at=date.today() - timedelta(days=1))
    else:
        token = make.token(owner, revoked=True)
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", token))
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


def test_read_repository_token_downloads(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    token = make.token(owner, scopes=["read_repository"])
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", token))
    assert r.status_code == 200, r.text


def test_read_repository_token_does_not_push(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    token = make.token(owner, scopes=["read_repository"])
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic("x", token))
    assert (r.status_code, r.text) == (403, "You are not allowed to upload code.\n")
    assert "www-authenticate" not in r.headers


def test_write_repository_token_pushes(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    token = make.token(owner, scopes=["write_repository"])
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic("x", token))
    assert r.status_code == 200, r.text


def test_token_without_repository_scope_does_not_download(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    token = make.token(owner, scopes=["read_user"])
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", token))
    assert (r.status_code, r.text) == (403, "You are not allowed to download code.\n")


# ---------------------------------------------------------------------------- access


def test_hidden_project_is_not_found(api, client, make):
    project = new_project(api, make.user())
    outsider = make.user()
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", outsider.token))
    assert (r.status_code, r.text) == (404, NOT_FOUND)
    assert r.headers["content-type"] == "text/plain; charset=utf-8"


def test_missing_project_is_not_found_for_a_signed_in_user(client, make):
    r = client.get(
        "/nobody/nothing.git/info/refs?service=git-upload-pack", headers=basic("x", make.user().token)
    )
    assert (r.status_code, r.text) == (404, NOT_FOUND)


def test_internal_project_is_cloned_by_any_signed_in_user(api, client, make):
    project = new_project(api, make.user(), visibility="internal")
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", make.user().token))
    assert r.status_code == 200, r.text


def test_guest_of_a_private_project_does_not_download(api, client, make):
    guest = make.user()
    project = new_project(api, make.user())
    add_member(api, project, guest, GUEST)
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", guest.token))
    assert (r.status_code, r.text) == (403, "You are not allowed to download code from this project.\n")


def test_reporter_downloads_but_does_not_push(api, client, make):
    reporter = make.user()
    project = new_project(api, make.user())
    add_member(api, project, reporter, REPORTER)
    assert (
        client.get(refs_url(project, "git-upload-pack"), headers=basic("x", reporter.token)).status_code
        == 200
    )
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic("x", reporter.token))
    assert (r.status_code, r.text) == (403, "You are not allowed to push code to this project.\n")


def test_archived_project_refuses_pushes(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    assert api(owner).post(f"/projects/{project['id']}/archive").status_code == 201
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic("x", owner.token))
    assert (r.status_code, r.text) == (403, "You can't push code to an archived project.\n")
    assert (
        client.get(refs_url(project, "git-upload-pack"), headers=basic("x", owner.token)).status_code == 200
    )


def test_unknown_service_is_not_allowed(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    r = client.get(f"/{project['path_with_namespace']}.git/info/refs", headers=basic("x", owner.token))
    assert (r.status_code, r.text) == (403, "The command you're trying to execute is not allowed.\n")
    r = client.get(refs_url(project, "git-archive"), headers=basic("x", owner.token))
    assert (r.status_code, r.text) == (403, "The command you're trying to execute is not allowed.\n")


def test_project_without_a_repository_has_none_to_download(client, make):
    owner = make.user()
    project = make.project(owner=owner)
    url = f"/{owner.username}/{project.path}.git/info/refs?service=git-upload-pack"
    r = client.get(url, headers=basic("x", owner.token))
    assert (r.status_code, r.text) == (404, "A repository for this project does not exist yet.\n")


def test_push_creates_a_missing_repository(client, make, settings):
    owner = make.user()
    project = make.project(owner=owner)
    url = f"/{owner.username}/{project.path}.git/info/refs?service=git-receive-pack"
    r = client.get(url, headers=basic("x", owner.token))
    assert r.status_code == 200, r.text
    assert b"capabilities^{}" in r.content
    assert store(settings).exists(project.id)


# ---------------------------------------------------------------------------- routing


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
def test_unknown_root_paths_stay_404_for_every_method(client, db, method):
    r = client.request(method, "/some/unknown/path")
    assert r.status_code == 404
    if method != "HEAD":
        assert r.json() == {"error": "404 Not Found"}


def test_git_paths_answer_404_to_the_wrong_method(client, db):
    r = client.post("/a/b.git/info/refs")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})
    r = client.get("/a/b.git/git-upload-pack")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


# ---------------------------------------------------------------------------- upload-pack


def ls_refs() -> bytes:
    return pkt("command=ls-refs\n") + b"0001" + pkt("symrefs\n") + b"0000"


def test_upload_pack_answers_a_v2_command(api, client, make, settings):
    project = new_project(api, make.user(), visibility="public")
    r = client.post(
        rpc_url(project, "git-upload-pack"),
        content=ls_refs(),
        headers={**UPLOAD_REQUEST, "Git-Protocol": "version=2"},
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-git-upload-pack-result"
    assert {k: r.headers[k] for k in NO_CACHE} == NO_CACHE
    head = head_of(settings, project)
    assert pkt_lines(r.content) == [
        f"{head} HEAD symref-target:refs/heads/main\n".encode(),
        f"{head} refs/heads/main\n".encode(),
        b"",
    ]


def test_upload_pack_inflates_gzip_bodies(api, client, make, settings):
    project = new_project(api, make.user(), visibility="public")
    r = client.post(
        rpc_url(project, "git-upload-pack"),
        content=gzip.compress(ls_refs()),
        headers={**UPLOAD_REQUEST, "Git-Protocol": "version=2", "Content-Encoding": "gzip"},
    )
    assert r.status_code == 200
    assert pkt_lines(r.content)[1] == f"{head_of(settings, project)} refs/heads/main\n".encode()


def test_upload_pack_sends_a_pack(api, client, make, settings):
    project = new_project(api, make.user(), visibility="public")
    head = head_of(settings, project)
    body = pkt(f"want {head} ofs-delta\n") + b"0000" + pkt("done\n")
    r = client.post(rpc_url(project, "git-upload-pack"), content=body, headers=UPLOAD_REQUEST)
    assert r.status_code == 200
    assert r.content.startswith(b"0008NAK\nPACK")


def test_upload_pack_refuses_another_content_type(api, client, make):
    project = new_project(api, make.user(), visibility="public")
    r = client.post(
        rpc_url(project, "git-upload-pack"), content=ls_refs(), headers={"Content-Type": "text/plain"}
    )
    assert (r.status_code, r.text) == (415, "Unsupported Media Type\n")


def test_upload_pack_post_needs_the_same_access(api, client, make):
    project = new_project(api, make.user())
    r = client.post(rpc_url(project, "git-upload-pack"), content=ls_refs(), headers=UPLOAD_REQUEST)
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


# ---------------------------------------------------------------------------- receive-pack


def test_receive_pack_post_needs_push_access(api, client, make):
    reporter = make.user()
    project = new_project(api, make.user())
    add_member(api, project, reporter, REPORTER)
    body = push_request((ZERO, "1" * 40, "refs/heads/x"))
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", reporter.token)},
    )
    assert (r.status_code, r.text) == (403, "You are not allowed to push code to this project.\n")


def test_deleting_a_branch_is_pushed_and_recorded(api, client, make, settings, db):
    owner = make.user()
    project = new_project(api, owner)
    sha = add_branch(settings, project, "feature")
    body = push_request((sha, ZERO, "refs/heads/feature"), caps="report-status")
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", owner.token)},
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-git-receive-pack-result"
    assert pkt_lines(r.content) == [b"unpack ok\n", b"ok refs/heads/feature\n", b""]
    assert store(settings).open(project["id"]).references.get("refs/heads/feature") is None
    event = db.scalars(
        select(Event).where(Event.project_id == project["id"]).order_by(Event.id.desc())
    ).first()
    assert (event.author_id, event.action, event.data["ref"], event.data["before"], event.data["after"]) == (
        owner.id,
        "pushed",
        "refs/heads/feature",
        sha,
        ZERO,
    )
    assert (event.data["action"], event.data["push_options"]) == ("removed", [])


def test_receive_pack_advertises_push_options(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic("x", owner.token))
    capabilities = pkt_lines(r.content)[2].split(b"\0")[1].split()
    assert b"push-options" in capabilities


def test_push_options_are_kept_with_the_push_event(api, client, make, settings, db):
    owner = make.user()
    project = new_project(api, owner)
    sha = add_branch(settings, project, "feature")
    body = push_request(
        (sha, ZERO, "refs/heads/feature"), caps="report-status", options=("ci.skip", "ci.variable=A=b c")
    )
    half = len(body) - 7  # the options arrive in two pieces
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=iter([body[:half], body[half:]]),
        headers={**RECEIVE_REQUEST, **basic("x", owner.token)},
    )
    assert pkt_lines(r.content) == [b"unpack ok\n", b"ok refs/heads/feature\n", b""]
    event = db.scalars(
        select(Event).where(Event.project_id == project["id"]).order_by(Event.id.desc())
    ).first()
    assert (event.data["ref"], event.data["push_options"]) == (
        "refs/heads/feature",
        ["ci.skip", "ci.variable=A=b c"],
    )


def test_protected_branch_refusal_is_a_report_on_the_side_band(api, client, make, settings):
    dev = make.user()
    project = new_project(api, make.user())
    add_member(api, project, dev, DEVELOPER)
    head = head_of(settings, project)
    body = push_request((head, "1" * 40, "refs/heads/main"), (ZERO, head, "refs/heads/other"))
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", dev.token)},
    )
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/x-git-receive-pack-result"
    report, progress = demux(r.content)
    assert progress == b"GitLab: You are not allowed to push code to protected branches on this project.\n"
    assert pkt_lines(report) == [
        b"unpack ok\n",
        b"ng refs/heads/main pre-receive hook declined\n",
        b"ng refs/heads/other pre-receive hook declined\n",
        b"",
    ]
    assert r.content.endswith(b"0000")
    assert head_of(settings, project) == head
    assert store(settings).open(project["id"]).references.get("refs/heads/other") is None


def test_refusal_without_side_band_names_the_reason(api, client, make, settings):
    dev = make.user()
    project = new_project(api, make.user())
    add_member(api, project, dev, DEVELOPER)
    body = push_request((head_of(settings, project), "1" * 40, "refs/heads/main"), caps="report-status")
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", dev.token)},
    )
    assert pkt_lines(r.content) == [
        b"unpack ok\n",
        b"ng refs/heads/main GitLab: You are not allowed to push code to protected branches on this project.\n",
        b"",
    ]


def test_developer_cannot_delete_a_protected_branch(api, client, make, settings, db):
    dev = make.user()
    project = new_project(api, make.user())
    add_member(api, project, dev, DEVELOPER)
    sha = add_branch(settings, project, "release")
    _protect(db, project["id"], "release")
    body = push_request((sha, ZERO, "refs/heads/release"))
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", dev.token)},
    )
    _, progress = demux(r.content)
    assert progress == (
        b"GitLab: You are not allowed to delete protected branches from this project. "
        b"Only a project maintainer or owner can delete a protected branch.\n"
    )


def test_maintainer_deletes_protected_branches_only_in_the_web_interface(api, client, make, settings, db):
    maintainer = make.user()
    project = new_project(api, make.user())
    add_member(api, project, maintainer, MAINTAINER)
    sha = add_branch(settings, project, "release")
    _protect(db, project["id"], "release")
    body = push_request((sha, ZERO, "refs/heads/release"))
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", maintainer.token)},
    )
    _, progress = demux(r.content)
    assert progress == b"GitLab: You can only delete protected branches using the web interface.\n"
    assert head_of(settings, project, "release") == sha


def test_developer_cannot_change_an_existing_tag(api, client, make, settings):
    dev = make.user()
    project = new_project(api, make.user())
    add_member(api, project, dev, DEVELOPER)
    head = head_of(settings, project)
    update_ref(store(settings).path(project["id"]), "refs/tags/v1", head, None, "setup")
    body = push_request((head, ZERO, "refs/tags/v1"))
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", dev.token)},
    )
    _, progress = demux(r.content)
    assert progress == b"GitLab: You are not allowed to change existing tags on this project.\n"


@pytest.mark.parametrize(
    "ref", ["refs/merge-requests/1/head", "refs/keep-around/" + "a" * 40, "refs/pipelines/1"]
)
def test_refs_kiln_keeps_are_refused_to_pushes(api, client, make, settings, ref):
    owner = make.user()
    project = new_project(api, owner)
    head = head_of(settings, project)
    body = push_request((ZERO, head, ref))
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", owner.token)},
    )
    _, progress = demux(r.content)
    assert progress == b"GitLab: deny updating a hidden ref\n"
    assert store(settings).open(project["id"]).references.get(ref) is None


def test_branch_named_like_a_commit_id_is_refused(api, client, make, settings):
    owner = make.user()
    project = new_project(api, owner)
    body = push_request((ZERO, head_of(settings, project), f"refs/heads/{'a' * 40}"))
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", owner.token)},
    )
    _, progress = demux(r.content)
    assert progress == b"GitLab: You cannot create a branch with a SHA-1 or SHA-256 branch name.\n"


def test_malformed_receive_pack_request_is_a_bad_request(api, client, make):
    owner = make.user()
    project = new_project(api, owner)
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=b"zzzz",
        headers={**RECEIVE_REQUEST, **basic("x", owner.token)},
    )
    assert (r.status_code, r.text) == (400, "invalid pkt-line length\n")


def _protect(db, project_id: int, name: str) -> None:
    with transaction(db):
        db.add(ProtectedBranch(project_id=project_id, name=name, push_access_level=40, merge_access_level=40))


def test_invalid_gzip_body_is_a_bad_request(api, client, make):
    project = new_project(api, make.user(), visibility="public")
    r = client.post(
        rpc_url(project, "git-upload-pack"),
        content=b"not gzip at all",
        headers={**UPLOAD_REQUEST, "Content-Encoding": "gzip"},
    )
    assert (r.status_code, r.text) == (400, "invalid gzip body\n")


def test_blocked_user_is_refused(api, client, make, db):
    owner = make.user()
    project = new_project(api, owner)
    owner.row.state = "blocked"
    db.commit()
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", owner.token))
    assert (r.status_code, r.text) == (403, "Your account has been blocked.\n")
    # The right password: told why, as with a token (GitLab's GitAccess).
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic(owner.username, owner.password))
    assert (r.status_code, r.text) == (403, "Your account has been blocked.\n")
    # A wrong one: nobody learns the account's state.
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic(owner.username, "wrong-password"))
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


# ---------------------------------------------------------------------------- instance settings


def test_password_for_git_disabled_refuses_username_and_password(api, client, make, db):
    owner = make.user()
    project = new_project(api, owner)
    instance_settings.update(db, {"password_authentication_enabled_for_git": False})
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic(owner.username, owner.password))
    assert (r.status_code, r.headers["www-authenticate"], r.text) == (401, CHALLENGE, ACCESS_DENIED)


def test_password_for_git_disabled_still_takes_tokens_as_the_password(api, client, make, db):
    owner = make.user()
    project = new_project(api, owner)
    instance_settings.update(db, {"password_authentication_enabled_for_git": False})
    r = client.get(refs_url(project, "git-receive-pack"), headers=basic(owner.username, owner.token))
    assert r.status_code == 200, r.text


def test_password_for_web_disabled_leaves_git_passwords_alone(api, client, make, db):
    owner = make.user()
    project = new_project(api, owner)
    instance_settings.update(db, {"password_authentication_enabled_for_web": False})
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic(owner.username, owner.password))
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("service", ["git-upload-pack", "git-receive-pack"])
def test_ssh_only_refuses_git_over_http(api, client, make, db, service):
    owner = make.user()
    project = new_project(api, owner)
    instance_settings.update(db, {"enabled_git_access_protocol": "ssh"})
    r = client.get(refs_url(project, service), headers=basic("x", owner.token))
    assert (r.status_code, r.text) == (403, HTTP_NOT_ALLOWED)
    assert "www-authenticate" not in r.headers
    post = client.post(
        rpc_url(project, service),
        content=b"0000",
        headers={"Content-Type": f"application/x-{service}-request", **basic("x", owner.token)},
    )
    assert (post.status_code, post.text) == (403, HTTP_NOT_ALLOWED)


def test_ssh_only_refuses_anonymous_clones_of_public_projects(api, client, make, db):
    project = new_project(api, make.user(), visibility="public")
    instance_settings.update(db, {"enabled_git_access_protocol": "ssh"})
    r = client.get(refs_url(project, "git-upload-pack"))
    assert (r.status_code, r.text) == (403, HTTP_NOT_ALLOWED)


def test_ssh_only_still_challenges_callers_without_credentials_first(api, client, make, db):
    project = new_project(api, make.user())
    instance_settings.update(db, {"enabled_git_access_protocol": "ssh"})
    r = client.get(refs_url(project, "git-upload-pack"))
    assert (r.status_code, r.headers["www-authenticate"]) == (401, CHALLENGE)


@pytest.mark.parametrize("protocol", ["http", None])
def test_http_or_both_protocols_allow_git_over_http(api, client, make, db, protocol):
    owner = make.user()
    project = new_project(api, owner)
    instance_settings.update(db, {"enabled_git_access_protocol": protocol})
    r = client.get(refs_url(project, "git-upload-pack"), headers=basic("x", owner.token))
    assert r.status_code == 200, r.text


# ---------------------------------------------------------------------------- languages


def empty_pack() -> bytes:
    """A pack of no objects: what a push sends when the server has every object already."""
    header = b"PACK" + struct.pack(">II", 2, 0)
    return header + hashlib.sha1(header).digest()


def python_commit(settings, project, branch: str) -> str:
    """A commit adding a Python file on `branch` (written into the repository directly: the
    push under test is what moves the default branch to it)."""
    add_branch(settings, project, branch)
    commit, _ = commit_actions(
        store(settings).open(project["id"]),
        branch=branch,
        actions=[FileAction("create", "app.py", b"print('hello')\n" * 50)],
        message="Add app",
        author=Person("A", "a@example.com"),
        committer=Person("A", "a@example.com"),
    )
    return str(commit.id)


def push_ref(client, owner, project, old: str, new: str, ref: str):
    body = push_request((old, new, ref), caps="report-status") + empty_pack()
    r = client.post(
        rpc_url(project, "git-receive-pack"),
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", owner.token)},
    )
    assert pkt_lines(r.content)[:2] == [b"unpack ok\n", f"ok {ref}\n".encode()], r.content
    return r


def python_projects(api, owner) -> list[int]:
    r = api(owner).get("/projects", params={"with_programming_language": "Python", "owned": "true"})
    return [p["id"] for p in r.json()]


def test_a_push_to_the_default_branch_computes_languages_in_the_background(
    api, client, make, settings, db, drain
):
    owner = make.user()
    project = new_project(api, owner)
    since = db.scalar(select(func.max(Job.id)))  # the first commit's own job
    new = python_commit(settings, project, "side")
    push_ref(client, owner, project, head_of(settings, project), new, "refs/heads/main")
    queued = db.scalars(select(Job.payload).where(Job.kind == languages.DETECT, Job.id > since)).all()
    assert queued == [{"project_id": project["id"]}]
    assert python_projects(api, owner) == []
    drain()
    assert python_projects(api, owner) == [project["id"]]
    row = db.execute(
        select(Project.primary_language, Project.languages_sha).where(Project.id == project["id"])
    ).one()
    assert tuple(row) == ("Python", new)


def test_a_push_to_another_branch_computes_nothing(api, client, make, settings, db, drain):
    owner = make.user()
    project = new_project(api, owner)
    since = db.scalar(select(func.max(Job.id)))  # the first commit's own job
    new = python_commit(settings, project, "side")
    push_ref(client, owner, project, ZERO, new, "refs/heads/topic")
    assert db.scalars(select(Job).where(Job.kind == languages.DETECT, Job.id > since)).all() == []
    drain()
    assert python_projects(api, owner) == []
