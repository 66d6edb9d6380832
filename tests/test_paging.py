"""Pages of a list statement (kiln.queries.paging): a kept statement's pages, keyset ones
included, are derived once and run compiled, each with its own bounds and values."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import bindparam, func, select, update

from kiln.models import PersonalAccessToken, User
from kiln.pagination import TOTAL_LIMIT, Page
from kiln.queries import projects as project_queries
from kiln.queries import users as user_queries
from kiln.queries.paging import count_capped, keyset_page
from tests.api.test_pagination import bulk_users

_T = PersonalAccessToken
# Kept, as the queries modules keep their lists: one user's tokens, the user a parameter.
KEPT = select(_T.id).where(_T.user_id == bindparam("user_id"))


def token_ids(db: Any, user: Any) -> list[int]:
    return list(db.scalars(select(_T.id).where(_T.user_id == user.id).order_by(_T.id)))


@pytest.mark.parametrize("sort", ["asc", "desc"])
def test_keyset_pages_of_a_kept_statement_each_answer_their_own_bounds(db, make, sort):
    """The same bound, with a new value on every page and a new user between them: the later
    runs are compiled, and each page is still its own."""
    ada, bob = make.user(), make.user()  # one token each
    for n in range(4):
        make.token(ada, name=f"ada-{n}")
    make.token(bob, name="bob-1")
    adas, bobs = token_ids(db, ada), token_ids(db, bob)
    if sort == "desc":
        adas, bobs = adas[::-1], bobs[::-1]
    page = Page(per_page=2, keyset=True, sort=sort)
    start = max(adas + bobs) + 1 if sort == "desc" else 0
    for user, ids in ((ada, adas), (bob, bobs), (ada, adas), (bob, bobs)):
        seen, key, more = [], start, True
        while more:
            bounds = (key, None) if sort == "asc" else (None, key)
            result = keyset_page(db, KEPT, page, _T.id, *bounds, core=True, params={"user_id": user.id})
            seen += [row.id for row in result.items]
            more, key = result.has_next, result.next_key
        assert seen == ids


def test_a_first_keyset_page_has_no_bound(db, make):
    ada, bob = make.user(), make.user()
    make.token(ada, name="ada-1")
    for user in (ada, bob, ada, bob):
        result = keyset_page(
            db,
            KEPT,
            Page(per_page=5, keyset=True, sort="asc"),
            _T.id,
            None,
            None,
            core=True,
            params={"user_id": user.id},
        )
        assert [row.id for row in result.items] == token_ids(db, user)
        assert (result.has_next, result.next_key) == (False, None)


def test_every_page_of_a_list_runs_the_one_kept_statement(api, make):
    """The page asked for is the page's bound values, not a shape of its own: walking pages
    keeps no new statement, and each page still answers its own rows."""
    for _ in range(4):
        make.user()
    everyone = [u["id"] for u in api("root").get("/users?per_page=100").json()]
    seen: list[int] = []
    shapes = None
    for n in range(1, len(everyone) + 1):
        r = api("root").get(f"/users?per_page=1&page={n}")
        seen += [u["id"] for u in r.json()]
        if shapes is None:
            shapes = len(user_queries._LISTINGS._built)
    assert seen == everyone
    assert len(user_queries._LISTINGS._built) == shapes


def test_a_count_below_the_cap_is_exact_whatever_the_table_s_largest_id(db, make):
    """Counted directly while the table's ids stay at most TOTAL_LIMIT, through the cap once
    one is above it: the same count either way."""
    ada = make.user()  # with a token of her own
    for n in range(3):
        make.token(ada, name=f"ada-{n}")
    params = {"user_id": ada.id}
    assert count_capped(db, KEPT, params) == 4
    moved = token_ids(db, ada)[0]
    db.execute(update(_T).where(_T.id == moved).values(id=TOTAL_LIMIT + 5))
    db.commit()
    assert db.scalar(select(func.max(_T.id))) > TOTAL_LIMIT
    assert count_capped(db, KEPT, params) == 4


def test_a_filtered_count_above_the_cap_is_left_out(db):
    bulk_users(db, TOTAL_LIMIT + 1, prefix="capped")
    many = select(User.id).where(User.username.like("capped%"))
    assert count_capped(db, many) is None
    few = select(User.id).where(User.username.like("capped1000%"))  # capped1000, capped10000
    assert count_capped(db, few) == 2


@pytest.mark.parametrize("route", ["/users", "/projects"])
def test_every_keyset_page_runs_the_one_kept_statement(api, client, make, route):
    """A keyset page's id bound is a value of the list's statement, not a shape of its own:
    following `next` keeps no new statement, and each page answers its own rows."""
    owner = make.user()
    for n in range(4):
        make.user()
        make.project(owner=owner, name=f"p{n}")
    root = api("root")
    everyone = [row["id"] for row in root.get(f"{route}?per_page=100&order_by=id&sort=asc").json()]
    listings = user_queries._LISTINGS if route == "/users" else project_queries._LISTINGS
    r = root.get(f"{route}?pagination=keyset&order_by=id&sort=asc&per_page=1")
    seen, shapes = [row["id"] for row in r.json()], []
    while 'rel="next"' in r.headers.get("link", ""):
        r = client.get(r.headers["link"].split(">")[0].lstrip("<"), headers=root.headers)
        seen += [row["id"] for row in r.json()]
        shapes.append(len(listings._built))  # the first page's shape, then the bounded one
    assert seen == everyone
    assert len(shapes) >= 3
    assert len(set(shapes)) == 1
    # The same bounds as plain filters, in offset pagination: each its own rows.
    middle = everyone[len(everyone) // 2]
    after = root.get(f"{route}?id_after={middle}&order_by=id&sort=asc").json()
    before = root.get(f"{route}?id_before={middle}&order_by=id&sort=asc").json()
    assert [row["id"] for row in after] == [i for i in everyone if i > middle]
    assert [row["id"] for row in before] == [i for i in everyone if i < middle]
