"""User content never runs in a browser: every response that carries bytes a user wrote
(uploads, avatars, raw files, raw blobs, archives) is sent with `nosniff` and a sandboxing
Content-Security-Policy; what a browser would render as a document or run (SVG, HTML, XML,
script) is plain text or an attachment; the bytes themselves go out unchanged."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest

from tests.api.test_users import PNG
from tests.factories.repositories import open_repository
from tests.repositories import new_project

SANDBOX = "default-src 'none'; sandbox"
TEXT = "text/plain; charset=utf-8"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.domain)"><script>alert(1)</script></svg>\n'
HTML = b"<!doctype html><script>fetch('/api/v4/user').then(r => r.text()).then(alert)</script>\n"
# Project uploads are routed by kiln.api.projects, which does not serve them as user content yet.


def disposition(response) -> tuple[str, str | None]:
    """The disposition type and the file name a browser reads from Content-Disposition: the
    exact `filename*` (RFC 6266 puts it before `filename`), or none."""
    header = response.headers["content-disposition"]
    exact = re.search(r"filename\*=UTF-8''([^;\s]*)", header)
    return header.split(";", 1)[0], unquote(exact.group(1)) if exact else None


def assert_guarded(response) -> None:
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"] == SANDBOX


def repository_with(api, make, files: dict[str, bytes]) -> tuple[object, dict]:
    """A public project whose main holds `files`, and its owner."""
    owner = make.user()
    project = new_project(api, make, owner, visibility="public")
    make.commit(project, files)
    return owner, project


def raw_file(api, caller, project, path: str):
    return api(caller).get(f"/projects/{project['id']}/repository/files/{path}/raw", params={"ref": "main"})


def raw_blob(api, caller, settings, project, path: str):
    sha = open_repository(settings, project).revparse_single(f"main:{path}").id
    return api(caller).get(f"/projects/{project['id']}/repository/blobs/{sha}/raw")


def upload(api, make, name: str, data: bytes):
    """A public project's upload of `data` as `name`, fetched back at its URL by nobody."""
    owner = make.user()
    project = make.project(owner=owner, visibility="public")
    body = api(owner).post(f"/projects/{project.id}/uploads", files={"file": (name, data)}).json()
    return api().get(body["full_path"])


# ------------------------------------------------------------------------------- uploads


def test_an_uploaded_svg_is_an_attachment_of_its_image_type_in_a_sandbox(api, make):
    r = upload(api, make, "logo.svg", SVG)
    assert (r.status_code, r.content) == (200, SVG)
    assert r.headers["content-type"] == "image/svg+xml"
    assert disposition(r) == ("attachment", "logo.svg")
    assert_guarded(r)


def test_an_uploaded_html_page_is_an_attachment_in_a_sandbox(api, make):
    r = upload(api, make, "page.html", HTML)
    assert (r.status_code, r.content) == (200, HTML)
    assert disposition(r) == ("attachment", "page.html")
    assert_guarded(r)


def test_an_uploaded_image_is_shown_inline_as_its_type_in_a_sandbox(api, make):
    r = upload(api, make, "shot.png", PNG)
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, PNG, "image/png")
    assert disposition(r) == ("inline", "shot.png")
    assert_guarded(r)


def test_an_avatar_is_shown_inline_as_its_image_type_in_a_sandbox(api, make, client):
    user = make.user()
    url = api("root").put(f"/users/{user.id}", files={"avatar": ("face.png", PNG)}).json()["avatar_url"]
    r = client.get(url)
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, PNG, "image/png")
    assert disposition(r) == ("inline", "face.png")
    assert_guarded(r)


# ---------------------------------------------------------------------- repository bytes


@pytest.mark.parametrize("name", ["page.html", "logo.svg", "feed.xml", "page.xhtml", "app.js"])
def test_a_raw_file_a_browser_would_run_is_its_source_as_plain_text(api, make, name):
    data = SVG if name.endswith("svg") else HTML
    owner, project = repository_with(api, make, {name: data})
    r = raw_file(api, owner, project, name)
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, data, TEXT)
    assert disposition(r) == ("inline", name)
    assert_guarded(r)


def test_a_binary_raw_file_named_as_a_document_is_an_attachment(api, make):
    data = b"\x00" + SVG
    owner, project = repository_with(api, make, {"logo.svg": data, "page.html": b"\x00" + HTML})
    svg = raw_file(api, owner, project, "logo.svg")
    assert (svg.content, svg.headers["content-type"], disposition(svg)) == (
        data,
        "image/svg+xml",
        ("attachment", "logo.svg"),
    )
    html = raw_file(api, owner, project, "page.html")
    assert (html.headers["content-type"], disposition(html)) == (
        "application/octet-stream",
        ("attachment", "page.html"),
    )
    assert_guarded(svg)
    assert_guarded(html)


def test_a_raw_image_is_shown_inline_as_its_type_in_a_sandbox(api, make):
    owner, project = repository_with(api, make, {"img/logo.png": PNG})
    r = raw_file(api, owner, project, "img%2Flogo.png")
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, PNG, "image/png")
    assert disposition(r) == ("inline", "logo.png")
    assert_guarded(r)


def test_a_raw_file_keeps_the_headers_clients_read(api, make):
    owner, project = repository_with(api, make, {"page.html": HTML})
    r = raw_file(api, owner, project, "page.html")
    assert (r.headers["x-service-file-name"], r.headers["x-service-ref"]) == ("page.html", "main")
    assert r.headers["content-length"] == str(len(HTML))


def test_a_head_on_a_raw_file_sends_the_same_guards(api, make):
    owner, project = repository_with(api, make, {"logo.svg": SVG})
    r = api(owner).head(f"/projects/{project['id']}/repository/files/logo.svg/raw", params={"ref": "main"})
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, b"", TEXT)
    assert_guarded(r)


def test_a_raw_blob_of_html_or_svg_is_its_source_as_plain_text(api, make, settings):
    owner, project = repository_with(api, make, {"page.html": HTML, "logo.svg": SVG})
    for path, data in (("page.html", HTML), ("logo.svg", SVG)):
        r = raw_blob(api, owner, settings, project, path)
        assert (r.status_code, r.content, r.headers["content-type"]) == (200, data, TEXT)
        assert r.headers["content-disposition"] == "inline"
        assert_guarded(r)


def test_a_binary_raw_blob_is_an_attachment(api, make, settings):
    data = b"\x00" + HTML
    owner, project = repository_with(api, make, {"page.html": data})
    r = raw_blob(api, owner, settings, project, "page.html")
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, data, "application/octet-stream")
    assert r.headers["content-disposition"] == "attachment"
    assert_guarded(r)


@pytest.mark.parametrize("suffix", ["", ".zip", ".tar", ".tar.bz2"])
def test_an_archive_is_an_attachment_in_a_sandbox(api, make, suffix):
    owner, project = repository_with(api, make, {"page.html": HTML})
    r = api(owner).get(f"/projects/{project['id']}/repository/archive{suffix}")
    assert r.status_code == 200
    kind, name = disposition(r)
    assert (kind, name.startswith(project["path"] + "-main-")) == ("attachment", True)
    assert_guarded(r)


# ---------------------------------------------------------------------------- file names


def test_a_hostile_file_name_stays_inside_its_disposition(api, make):
    """Quotes, semicolons and non-ASCII in a name cannot end the header's value or add a
    parameter: the fallback is printable ASCII, the exact name percent-encoded UTF-8."""
    name = 'x"; filename=evil.html; a=".svg'
    owner, project = repository_with(api, make, {name: SVG})
    r = raw_file(api, owner, project, "x%22%3B%20filename%3Devil.html%3B%20a%3D%22.svg")
    assert r.status_code == 200
    header = r.headers["content-disposition"]
    assert header.startswith("inline; filename=\"x_; filename=evil.html; a=_.svg\"; filename*=UTF-8''")
    assert disposition(r) == ("inline", name)
    assert_guarded(r)


def test_a_non_ascii_file_name_reaches_the_browser_exactly(api, make):
    owner, project = repository_with(api, make, {"café.svg": SVG})
    r = raw_file(api, owner, project, "caf%C3%A9.svg")
    assert r.status_code == 200
    assert disposition(r) == ("inline", "café.svg")
