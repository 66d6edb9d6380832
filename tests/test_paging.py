"""Pages of a list statement (kiln.queries.paging): a kept statement's pages, keyset ones
included, are derived once and run compiled, each with its own bounds and values."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import bindparam, select

from kiln.models import PersonalAccessToken
from kiln.pagination import Page
from kiln.queries import users as user_queries
from kiln.queries.paging import keyset_page

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
