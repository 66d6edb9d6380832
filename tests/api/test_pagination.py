"""Offset and keyset pagination on GET /users (as root, so the order is the caller's to pick):
headers on every page, absolute Link on the external URL, caps and fallbacks, totals
omitted past 10,000, and a client following Link until it ends."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import insert

from kiln.models import User

BASE = "http://kiln.test/api/v4/users"
_LINK = re.compile(r'<([^>]+)>; rel="(\w+)"')


def links(r: Any) -> list[tuple[str, str]]:
    """(rel, url) in header order."""
    return [(rel, url) for url, rel in _LINK.findall(r.headers.get("link", ""))]


def x_headers(r: Any) -> dict[str, str]:
    """The pagination headers (every X- header but the request id, which each answer has)."""
    return {
        k.lower(): v
        for k, v in r.headers.items()
        if k.lower().startswith("x-") and k.lower() != "x-request-id"
    }


def bulk_users(db: Any, n: int, prefix: str = "bulk") -> None:
    """n users in one INSERT: set-up for counts, not a path under test."""
    db.execute(
        insert(User),
        [
            {"username": f"{prefix}{i}", "email": f"{prefix}{i}@example.com", "name": f"Bulk {i}"}
            for i in range(n)
        ],
    )
    db.commit()


@pytest.fixture
def seven(make) -> list[int]:
    """Ids of root and six users, ascending: three pages of three."""
    return [1] + [make.user().id for _ in range(6)]


def test_first_page(api, seven):
    r = api("root").get("/users?sort=asc&per_page=3")
    assert r.status_code == 200
    assert [u["id"] for u in r.json()] == seven[:3]
    assert x_headers(r) == {
        "x-page": "1",
        "x-per-page": "3",
        "x-next-page": "2",
        "x-prev-page": "",
        "x-total": "7",
        "x-total-pages": "3",
    }
    assert r.headers["link"] == (
        f'<{BASE}?page=2&per_page=3&sort=asc>; rel="next", '
        f'<{BASE}?page=1&per_page=3&sort=asc>; rel="first", '
        f'<{BASE}?page=3&per_page=3&sort=asc>; rel="last"'
    )


def test_middle_page_has_all_four_rels_in_order_with_sorted_query(api, seven):
    r = api("root").get("/users?sort=asc&per_page=3&order_by=id&page=2")
    assert [u["id"] for u in r.json()] == seven[3:6]
    assert (r.headers["x-page"], r.headers["x-next-page"], r.headers["x-prev-page"]) == ("2", "3", "1")
    assert r.headers["link"] == (
        f'<{BASE}?order_by=id&page=1&per_page=3&sort=asc>; rel="prev", '
        f'<{BASE}?order_by=id&page=3&per_page=3&sort=asc>; rel="next", '
        f'<{BASE}?order_by=id&page=1&per_page=3&sort=asc>; rel="first", '
        f'<{BASE}?order_by=id&page=3&per_page=3&sort=asc>; rel="last"'
    )


def test_last_page(api, seven):
    r = api("root").get("/users?sort=asc&per_page=3&page=3")
    assert [u["id"] for u in r.json()] == seven[6:]
    assert x_headers(r) == {
        "x-page": "3",
        "x-per-page": "3",
        "x-next-page": "",
        "x-prev-page": "2",
        "x-total": "7",
        "x-total-pages": "3",
    }
    assert [rel for rel, _ in links(r)] == ["prev", "first", "last"]


def test_beyond_the_last_page(api, seven):
    r = api("root").get("/users?sort=asc&per_page=3&page=9")
    assert (r.status_code, r.json()) == (200, [])
    assert x_headers(r) == {
        "x-page": "9",
        "x-per-page": "3",
        "x-next-page": "",
        "x-prev-page": "",
        "x-total": "7",
        "x-total-pages": "3",
    }
    assert links(r) == [
        ("first", f"{BASE}?page=1&per_page=3&sort=asc"),
        ("last", f"{BASE}?page=3&per_page=3&sort=asc"),
    ]


def test_defaults_and_empty_neighbours(api):
    r = api("root").get("/users")
    assert x_headers(r) == {
        "x-page": "1",
        "x-per-page": "20",
        "x-next-page": "",
        "x-prev-page": "",
        "x-total": "1",
        "x-total-pages": "1",
    }
    assert links(r) == [("first", f"{BASE}?page=1&per_page=20"), ("last", f"{BASE}?page=1&per_page=20")]


def test_empty_list_has_one_page(api):
    r = api("root").get("/users?username=nobody")
    assert (r.status_code, r.json()) == (200, [])
    assert (r.headers["x-total"], r.headers["x-total-pages"], r.headers["x-next-page"]) == ("0", "1", "")


def test_link_is_absolute_on_the_external_url(api, configure, seven):
    configure(external_url="https://git.example.com:8443")
    r = api("root").get("/users?per_page=3&page=2")
    assert [url for _, url in links(r)] == [
        "https://git.example.com:8443/api/v4/users?page=1&per_page=3",
        "https://git.example.com:8443/api/v4/users?page=3&per_page=3",
        "https://git.example.com:8443/api/v4/users?page=1&per_page=3",
        "https://git.example.com:8443/api/v4/users?page=3&per_page=3",
    ]


def test_link_keeps_array_and_hash_params_encoded(api):
    r = api("root").get("/users?custom_attributes[team]=a%20b&search=x")
    assert links(r)[0] == ("first", f"{BASE}?custom_attributes%5Bteam%5D=a+b&page=1&per_page=20&search=x")


def test_per_page_is_capped_at_100(api, db):
    bulk_users(db, 120)
    r = api("root").get("/users?per_page=500")
    assert (r.status_code, len(r.json())) == (200, 100)
    assert (r.headers["x-per-page"], r.headers["x-total"], r.headers["x-total-pages"]) == ("100", "121", "2")
    assert links(r)[0] == ("next", f"{BASE}?page=2&per_page=100")


def test_per_page_zero_is_400(api):
    r = api("root").get("/users?per_page=0")
    assert (r.status_code, r.json()) == (400, {"error": "per_page has a value not allowed"})


@pytest.mark.parametrize("param", ["per_page", "page"])
def test_non_integer_page_params_are_400(api, param):
    r = api("root").get(f"/users?{param}=abc")
    assert (r.status_code, r.json()) == (400, {"error": f"{param} is invalid"})


def test_negative_values_fall_back(api, seven):
    r = api("root").get("/users?sort=asc&per_page=-5&page=-3")
    assert r.status_code == 200
    assert [u["id"] for u in r.json()] == seven
    assert (r.headers["x-page"], r.headers["x-per-page"]) == ("1", "20")


def test_totals_and_last_omitted_above_10000(api, db):
    bulk_users(db, 10_001)  # 10,002 with root
    r = api("root").get("/users?per_page=100&sort=asc")
    assert (r.status_code, len(r.json())) == (200, 100)
    assert x_headers(r) == {"x-page": "1", "x-per-page": "100", "x-next-page": "2", "x-prev-page": ""}
    assert [rel for rel, _ in links(r)] == ["next", "first"]

    last = api("root").get("/users?per_page=100&sort=asc&page=101")
    assert len(last.json()) == 2
    assert x_headers(last) == {"x-page": "101", "x-per-page": "100", "x-next-page": "", "x-prev-page": "100"}
    assert [rel for rel, _ in links(last)] == ["prev", "first"]


def test_totals_shown_at_exactly_10000(api, db):
    bulk_users(db, 9_999)
    r = api("root").get("/users?per_page=100&page=3")
    assert (r.headers["x-total"], r.headers["x-total-pages"]) == ("10000", "100")
    assert links(r)[-1] == ("last", f"{BASE}?page=100&per_page=100")


def test_following_link_collects_every_item_once(api, client, make):
    expected = sorted([1] + [make.user().id for _ in range(7)])
    root = api("root")
    r = root.get("/users?per_page=3")
    seen = [u["id"] for u in r.json()]
    pages = 1
    while next_url := dict(links(r)).get("next"):
        r = client.get(next_url, headers=root.headers)
        assert r.status_code == 200
        seen += [u["id"] for u in r.json()]
        pages += 1
    assert (sorted(seen), len(seen), pages) == (expected, 8, 3)


# --- keyset -----------------------------------------------------------------------------------


def test_keyset_gives_only_a_next_link(api, make):
    ids = [1] + [make.user().id for _ in range(4)]
    r = api("root").get("/users?pagination=keyset&order_by=id&sort=asc&per_page=2")
    assert (r.status_code, [u["id"] for u in r.json()]) == (200, ids[:2])
    assert x_headers(r) == {}
    assert r.headers["link"] == (
        f'<{BASE}?id_after={ids[1]}&order_by=id&pagination=keyset&per_page=2&sort=asc>; rel="next"'
    )


def test_keyset_descending_uses_id_before(api, make):
    ids = [1] + [make.user().id for _ in range(2)]
    r = api("root").get("/users?pagination=keyset&per_page=2")
    assert [u["id"] for u in r.json()] == ids[::-1][:2]
    assert links(r) == [("next", f"{BASE}?id_before={ids[1]}&pagination=keyset&per_page=2")]


def test_keyset_end_has_no_link(api, make):
    last = [make.user().id for _ in range(2)][-1]
    r = api("root").get(f"/users?pagination=keyset&order_by=id&sort=asc&id_after={last}")
    assert (r.status_code, r.json()) == (200, [])
    assert "link" not in r.headers
    assert x_headers(r) == {}


def test_following_keyset_links_collects_every_item_once(api, client, make):
    expected = [1] + [make.user().id for _ in range(6)]
    root = api("root")
    r = root.get("/users?pagination=keyset&order_by=id&sort=asc&per_page=2")
    seen = [u["id"] for u in r.json()]
    while next_url := dict(links(r)).get("next"):
        r = client.get(next_url, headers=root.headers)
        assert (r.status_code, x_headers(r)) == (200, {})
        seen += [u["id"] for u in r.json()]
    assert seen == expected


@pytest.mark.parametrize("order_by", ["name", "username", "created_at"])
def test_keyset_with_another_order_is_refused(api, order_by):
    r = api("root").get(f"/users?pagination=keyset&order_by={order_by}")
    assert (r.status_code, r.json()) == (
        405,
        {"error": "Keyset pagination is not yet available for this type of request"},
    )


def test_keyset_unavailable_where_not_allowed(api):
    r = api("root").get("/personal_access_tokens?pagination=keyset")
    assert (r.status_code, r.json()) == (
        405,
        {"error": "Keyset pagination is not yet available for this type of request"},
    )
