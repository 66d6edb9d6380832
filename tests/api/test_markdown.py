"""GitLab's Markdown API: POST /markdown renders text as kiln renders `*_html` fields."""

from __future__ import annotations

import re

from kiln.models.namespaces import GUEST

BASE = "http://kiln.test"


def render(api, caller, **body):
    return api(caller).post("/markdown", json=body)


def test_anonymous_callers_are_refused(api):
    r = render(api, None, text="hi")
    assert r.status_code == 401
    assert "html" not in r.json()


def test_text_is_required(api, make):
    r = render(api, make.user())
    assert r.status_code == 400
    assert r.json() == {"error": "text is missing"}


def test_plain_markdown_is_rendered_and_sanitized(api, make):
    owner = make.user()
    project = make.project(owner=owner)
    make.issue(project, owner)
    text = "**bold** <script>alert(1)</script> #1"
    r = render(api, owner, text=text, project=str(project.id))
    assert r.status_code == 201, r.text
    html = r.json()["html"]
    assert "<strong>bold</strong>" in html
    assert "<script>" not in html
    assert "<a" not in html  # without gfm nothing is a reference
    linked = render(api, owner, text=text, gfm=True, project=str(project.id)).json()["html"]
    assert "/-/issues/1" in linked


def test_gfm_links_references_in_the_project(api, make):
    owner = make.user(username="alice")
    group = make.group(owners=[owner], path="team")
    project = make.project(namespace=group, owner=owner, path="app")
    make.issue(project, owner, title="Crash")
    make.label(project=project, title="bug")
    r = render(api, owner, text="See #1, ~bug and @alice; `#1` in code.", gfm=True, project="team/app")
    assert r.status_code == 201, r.text
    html = r.json()["html"]
    assert f'href="{BASE}/team/app/-/issues/1"' in html
    assert re.search(r'<a [^>]*data-reference-type="label"[^>]*>bug</a>', html), html
    assert f'href="{BASE}/alice"' in html
    assert "<code>#1</code>" in html


def test_a_confidential_issue_hidden_from_the_caller_stays_text(api, make):
    owner, guest = make.user(), make.user()
    project = make.project(owner=owner, visibility="private")
    make.member(project, guest, GUEST)
    make.issue(project, owner, confidential=True)
    r = render(api, guest, text="#1", gfm=True, project=str(project.id))
    assert r.status_code == 201, r.text
    assert "<a" not in r.json()["html"]
    assert "#1" in r.json()["html"]
    seen = render(api, owner, text="#1", gfm=True, project=str(project.id))
    assert "/-/issues/1" in seen.json()["html"]


def test_a_hidden_project_is_not_found(api, make):
    owner = make.user()
    project = make.project(owner=owner, visibility="private")
    r = render(api, make.user(), text="#1", gfm=True, project=str(project.id))
    assert r.status_code == 404
    assert r.json() == {"message": "404 Project Not Found"}
    assert render(api, owner, text="#1", gfm=True, project=str(project.id)).status_code == 201
