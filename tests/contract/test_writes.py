"""Writes never wait on the event loop: a write takes the database's writer (SQLite's lock,
PostgreSQL's row locks), which a job, a git write or another process may hold for a while, and
a loop that waits for it stops every other request of the process. So every route that changes
something calls its service through `in_thread` (kiln/api/_deps.py); reads stay inline, and
what they write on the way never waits (kiln/db.py `try_transaction`)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from litestar.handlers import HTTPRouteHandler

from kiln.api import API_PREFIX, API_ROUTES, ROOT_ROUTES

WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}

# Write methods that need no thread, each with its reason. A new entry is a decision.
INLINE_WRITES: dict[str, str] = {
    # The catch-all of git's HTTP paths answers every other method 404: nothing is written.
    "PUT /{full:path}": "no route: 404",
    "PATCH /{full:path}": "no route: 404",
    "DELETE /{full:path}": "no route: 404",
}

# GET routes whose service writes, as a write would (none today). Reads that write only
# bookkeeping do it without waiting, inline (db.try_transaction: a token's last use, a
# status past its clear time); a read that must write for real belongs here, in a thread.
WRITING_READS: set[str] = set()


def _routes() -> list[tuple[str, str, Callable[..., Any]]]:
    found = []
    for prefix, table in ((API_PREFIX, API_ROUTES), ("", ROOT_ROUTES)):
        for handler in table:
            assert isinstance(handler, HTTPRouteHandler)
            for method in sorted(handler.http_methods):
                for path in sorted(handler.paths):
                    found.append((method, prefix + path, handler.fn))
    return found


def _calls_in_thread(fn: Callable[..., Any], seen: frozenset[str] = frozenset()) -> bool:
    """`fn` calls `in_thread`, itself or through a helper of its own module (git's routes
    open the repository in `_open`), or hands it on to code that runs its steps in threads
    (git's receive-pack streams the body on the loop, runs git and the push's bookkeeping
    in threads)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    helpers = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
        if name == "in_thread" or any(isinstance(a, ast.Name) and a.id == "in_thread" for a in node.args):
            return True
        helper = fn.__globals__.get(name) if isinstance(callee, ast.Name) else None
        if inspect.isfunction(helper) and helper.__module__ == fn.__module__ and name not in seen:
            helpers.append(helper)
    return any(_calls_in_thread(h, seen | {fn.__name__}) for h in helpers)


def _key(method: str, path: str) -> str:
    return f"{method} {path.removeprefix(API_PREFIX)}"


def test_every_write_route_runs_its_service_in_a_thread():
    offenders = [
        _key(method, path)
        for method, path, fn in _routes()
        if (method in WRITE_METHODS or _key(method, path) in WRITING_READS)
        and _key(method, path) not in INLINE_WRITES
        and not _calls_in_thread(fn)
    ]
    assert offenders == []


def test_every_exception_names_a_route():
    keys = {_key(method, path) for method, path, _ in _routes()}
    assert set(INLINE_WRITES) - keys == set()
    assert WRITING_READS - keys == set()
