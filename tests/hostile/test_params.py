"""Parameters an attacker crafts: ids no integer column holds, digits `int()` refuses, NUL
bytes, bracketed keys nested a thousand deep, a thousand filters. Each is a 4xx (or an empty
answer), never a 500."""

from __future__ import annotations

import pytest

HUGE_IDS = [
    "9223372036854775808",
    "99999999999999999999",
    "18446744073709551616",
    "%C2%B2",
    "%D9%A3",
    "-1",
    "0x10",
]
NUL_REFUSED = {"message": "400 Bad request - Null bytes are not allowed"}


NOT_FOUND = {
    "/projects/{}": "404 Project Not Found",
    "/projects/{}/repository/tree": "404 Project Not Found",
    "/groups/{}": "404 Group Not Found",
    "/groups/{}/projects": "404 Group Not Found",
    "/users/{}/projects": "404 User Not Found",
    "/namespaces/{}": "404 Namespace Not Found",
    "/projects/{}/members": "404 Project Not Found",
}


@pytest.mark.parametrize("ident", HUGE_IDS)
@pytest.mark.parametrize("template", sorted(NOT_FOUND))
def test_ids_no_column_holds_are_not_found(api, template, ident):
    r = api("root").get(template.format(ident))
    assert (r.status_code, r.json()) == (404, {"message": NOT_FOUND[template]}), (template, ident)


@pytest.mark.parametrize("ident", HUGE_IDS)
def test_a_user_id_no_column_holds_matches_no_route(api, ident):
    """`/users/:id` takes digits only: anything else, or more than BIGINT holds, is no route."""
    r = api("root").get(f"/users/{ident}")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


@pytest.mark.parametrize("ident", ["9223372036854775808", "99999999999999999999", "²", "٣"])
def test_sudo_to_an_id_no_column_holds_is_not_found(api, ident):
    r = api("root").get("/user", headers={"Sudo": ident.encode()})
    assert r.status_code == 404, r.text


@pytest.mark.parametrize(
    "query",
    [
        "page=9223372036854775808",
        "per_page=99999999999999999999",
        "id_after=9223372036854775808",
        "page=%C2%B2",
    ],
)
def test_paging_numbers_no_column_holds_are_refused(api, query):
    r = api("root").get(f"/projects?{query}")
    assert r.status_code == 400, r.text


@pytest.mark.parametrize(
    "suffix",
    [
        "/repository/commits?path=a%00b",
        "/repository/commits?author=a%00",
        "/repository/commits?ref_name=main%00x",
        "/repository/files/README.md?ref=main%00x",
        "/repository/tree?path=a%00",
        "/repository/archive?sha=main%00x",
        "/repository/branches/main%00",
        "/repository/files/a%00b/raw?ref=main",
    ],
)
def test_a_nul_anywhere_in_the_url_is_refused(api, owner, project, suffix):
    r = api(owner).get(f"/projects/{project['id']}{suffix}")
    assert r.status_code == 400, r.text
    assert r.json() == NUL_REFUSED


@pytest.mark.parametrize("header", ["Sudo", "Private-Token", "X-Anything"])
def test_a_nul_in_any_header_is_refused(api, header):
    r = api("root").get("/user", headers={header: b"a\x00b"})
    assert r.status_code == 400
    assert r.json() == NUL_REFUSED


def test_a_nul_in_a_query_of_any_route_is_refused(api):
    r = api("root").get("/projects?search=a%00")
    assert r.status_code == 400
    assert r.json() == NUL_REFUSED


def test_a_nul_in_a_json_body_is_refused_and_nothing_is_written(api, owner, project):
    before = api(owner).get(f"/projects/{project['id']}/repository/branches").json()
    r = api(owner).post(
        f"/projects/{project['id']}/repository/files/new.txt",
        json={"branch": "side\x00x", "start_branch": "main", "content": "x", "commit_message": "m"},
    )
    assert r.status_code == 400
    assert r.json() == NUL_REFUSED
    assert api(owner).get(f"/projects/{project['id']}/repository/branches").json() == before


def test_a_nul_deep_in_a_json_body_is_refused(api, owner, project):
    actions = [{"action": "create", "file_path": "a.txt", "content": "x"}] * 3 + [
        {"action": "create", "file_path": "b.txt", "content": "x", "author_name": "a\x00"}
    ]
    r = api(owner).post(
        f"/projects/{project['id']}/repository/commits",
        json={"branch": "main", "commit_message": "m", "actions": actions},
    )
    assert r.status_code == 400
    assert r.json() == NUL_REFUSED


def test_a_nul_in_a_form_body_is_refused(api):
    r = api("root").post("/projects", data={"name": "a\x00b"})
    assert r.status_code == 400
    assert r.json() == NUL_REFUSED


def test_a_nul_in_a_form_key_is_refused(api):
    r = api("root").post(
        "/projects", content=b"name=ok&a%00b=1", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400
    assert r.json() == NUL_REFUSED


def test_bracket_keys_nested_a_thousand_deep_in_a_query_are_refused(api):
    r = api("root").get("/projects?a" + "[b]" * 1000 + "=1")
    assert r.status_code == 400
    assert r.json() == {"message": "400 Bad request - Parameters are nested too deeply"}


def test_bracket_keys_nested_a_thousand_deep_in_a_form_are_refused(api):
    body = "name=x&a" + "[b]" * 1000 + "=1"
    r = api("root").post(
        "/projects", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400
    assert r.json()["message"].endswith("nested too deeply")
    assert api("root").get("/projects?search=x").json() == []


def test_bracket_keys_as_deep_as_rack_allows_are_read(api):
    r = api("root").get("/projects?custom_attributes" + "[b]" * 31 + "=1")
    assert r.status_code == 400  # a filter value must be a string: Grape's message, not a refusal of depth
    assert "nested" not in r.text


def test_more_pairs_than_rack_allows_are_refused(api):
    body = "name=x&" + "&".join(f"k{i}=v" for i in range(10_001))
    r = api("root").post(
        "/projects", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400
    assert r.json() == {"message": "400 Bad request - Too many parameters"}


@pytest.mark.parametrize("listing", ["/users", "/projects", "/groups"])
def test_a_thousand_custom_attribute_filters_answer(api, make, listing):
    query = "&".join(f"custom_attributes[k{i}]=v" for i in range(1000))
    r = api("root").get(f"{listing}?{query}")
    assert r.status_code == 200, r.text
    assert r.json() == []


def test_custom_attribute_filters_still_need_every_pair(api, make):
    both, one = make.user(username="both-pairs"), make.user(username="one-pair")
    for user, pairs in ((both, {"team": "a", "site": "b"}), (one, {"team": "a"})):
        for key, value in pairs.items():
            assert (
                api("root")
                .put(f"/users/{user.id}/custom_attributes/{key}", json={"value": value})
                .status_code
                == 200
            )
    r = api("root").get("/users?custom_attributes[team]=a&custom_attributes[site]=b")
    assert [u["username"] for u in r.json()] == ["both-pairs"]
    r = api("root").get("/users?custom_attributes[team]=a")
    assert sorted(u["username"] for u in r.json()) == ["both-pairs", "one-pair"]
