"""Input shaped to make matching slow (ReDoS and its kin): every pattern kiln matches user
text with is linear or bounded first. Search terms are bounded below what the database's
LIKE accepts; e-mails, names and Markdown are bounded before any pattern sees them."""

from __future__ import annotations

from typing import Any

import pytest

from kiln.schemas._types import MAX_SEARCH
from tests.repositories import new_project

LISTINGS = [
    "/users?search={}",
    "/projects?search={}",
    "/groups?search={}",
    "/namespaces?search={}",
    "/personal_access_tokens?search={}",
    "/projects/{project}/members/all?query={}",
    "/projects/{project}/repository/branches?search={}",
    "/projects/{project}/repository/tags?search={}",
    "/projects/{project}/starrers?search={}",
    "/users/{user}/projects?search={}",
    "/groups/{group}/projects?search={}",
]


@pytest.fixture
def places(api: Any, make: Any, owner: Any) -> dict[str, Any]:
    project = new_project(api, make, owner)
    group = make.group(owners=[owner])
    return {"project": project["id"], "user": owner.id, "group": group.id}


@pytest.mark.parametrize("listing", LISTINGS)
def test_a_search_term_longer_than_anything_stored_is_refused(api, owner, places, listing):
    """Sent in a JSON body: a URL that long never gets past the HTTP server."""
    url = listing.format("", **places).split("?")[0]
    name = listing.split("?")[1].split("=")[0]
    r = api(owner).request("GET", url, json={name: "%_" * (MAX_SEARCH // 2) + "a"})
    assert r.status_code == 400, r.text
    assert r.json() == {"error": f"{name} is too long (maximum is {MAX_SEARCH} characters)"}


@pytest.mark.parametrize("listing", LISTINGS)
def test_a_search_term_of_wildcards_as_long_as_allowed_matches_them_literally(api, owner, places, listing):
    url = listing.format("", **places).split("?")[0]
    name = listing.split("?")[1].split("=")[0]
    r = api(owner).request("GET", url, json={name: "%" * MAX_SEARCH})
    assert r.status_code == 200, r.text
    assert r.json() == []


def test_an_email_built_to_backtrack_is_refused_by_its_length(api):
    r = api("root").post(
        "/users",
        json={"email": "a@" + "." * 100_000 + "@", "username": "x", "name": "x", "password": "long-enough-1"},
    )
    assert r.status_code == 400
    assert r.json() == {"message": {"email": ["is too long (maximum is 255 characters)"]}}


@pytest.mark.parametrize(
    "text",
    [
        "[" * 2000,
        "[" * 1000 + "]" * 1000,
        "*_" * 1000,
        "[a](" * 500,
        "<" * 2000,
        "&#" * 1000,
        "> " * 1000,
    ],
)
def test_a_description_built_to_slow_markdown_renders(api, owner, text):
    r = api(owner).post("/projects", json={"name": "slow-markdown", "description": text})
    assert r.status_code == 201, r.text
    assert "<script" not in r.json()["description_html"]


def test_a_commit_message_line_without_trailers_is_read_whole(api, owner, places):
    message = "subject\n\n" + "Key" + "-" * 200_000 + " value without a colon"
    r = api(owner).post(
        f"/projects/{places['project']}/repository/commits",
        json={
            "branch": "main",
            "commit_message": message,
            "actions": [{"action": "create", "file_path": "t.txt", "content": "t"}],
        },
    )
    assert r.status_code == 201, r.text
    assert (
        api(owner).get(f"/projects/{places['project']}/repository/commits/{r.json()['id']}").json()["message"]
        == message
    )
