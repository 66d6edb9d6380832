"""Every operation of the OpenAPI document kiln serves, fuzzed: its path, query and body
parameters drawn from the document's schemas, from the objects of a seeded world (so that
path parameters reach real handlers, not only 404s) and from what an attacker sends (NUL
bytes, integers past BIGINT, digits that are not ASCII, 10,000-character strings, keys
nested a thousand brackets deep, malformed bodies and credentials). Each operation is
fuzzed as root, as an ordinary user and anonymously, in process, from a fixed seed and for
a bounded number of examples. No answer may be a 5xx, every 4xx carries a JSON body, and a
write leaves every repository sound.

A write that succeeded may have deleted, renamed, archived or blocked what the world holds:
the world is restored before the next example (a savepoint, a copy of the data dir), so
every example meets the same objects. A worker seeds each world once (with and without a
merge request) and writes its rows again into each later test's rolled-back transaction,
with a fresh copy of its data dir: every operation meets the same world, none sees what
another did.

`KNOWN_5XX` lists the failures kiln still has; a 5xx that is not in it fails the run, and an
entry that no longer fails fails `test_a_known_5xx_still_fails`: delete it then.

KILN_FUZZ_EXAMPLES (examples per operation and caller, 8 by default) and KILN_FUZZ_SEED run
it longer or differently; KILN_FUZZ_REPORT names a file that gets, as JSON lines, what each
operation answered each caller (by status) and every distinct failure."""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import traceback
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, Phase, assume, given, seed, settings
from hypothesis import strategies as st
from litestar import Litestar, Router
from sqlalchemy import Connection, Table, select
from sqlalchemy.orm import Session

from kiln.api import API_PREFIX, API_ROUTES, ROOT_ROUTES, _openapi
from kiln.api._deps import DEPENDENCIES
from kiln.models import Base, PersonalAccessToken
from kiln.runtime import Runtime
from tests.api.test_users import PNG
from tests.conftest import sequence_positions
from tests.factories import Factory
from tests.factories.repositories import open_repository
from tests.factories.users import DEFAULT_PASSWORD
from tests.repositories import unsound_repositories

EXAMPLES = int(os.environ.get("KILN_FUZZ_EXAMPLES", "8"))
SEED = int(os.environ.get("KILN_FUZZ_SEED", "0"))
REPORT = os.environ.get("KILN_FUZZ_REPORT")
CALLERS = ("root", "user", "anonymous")
READS = frozenset({"GET", "HEAD", "OPTIONS"})
GIT = "/{full}"  # git over HTTP: its errors are plain text, as git clients show them


@dataclass(frozen=True)
class Known:
    """A 5xx kiln still answers: on which operation ("*": any), the exception's type and a
    function of kiln its traceback passes through; and one request that shows it (its
    `{names}` are the seeded world's first values), on the databases where it fails."""

    operation: str
    error: str
    where: str
    caller: str
    method: str
    target: str
    headers: tuple[tuple[str, str], ...] = ()
    body: str | None = None
    databases: tuple[str, ...] = ("sqlite", "postgres")

    def covers(self, found: Finding) -> bool:
        return (
            self.operation in ("*", found.operation)
            and self.error == found.error
            and self.where in found.frames
        )


KNOWN_5XX: list[Known] = []


def _document() -> dict[str, Any]:
    """The document as kiln builds it, from the same route table, for collection: the
    served one is checked to be the same (test_the_fuzzed_document_is_the_served_one)."""
    app = Litestar(
        route_handlers=[Router(API_PREFIX, route_handlers=API_ROUTES), *ROOT_ROUTES],
        dependencies=DEPENDENCIES,
        openapi_config=None,
    )
    return _openapi.build(app)


DOCUMENT = _document()
COMPONENTS: dict[str, Any] = DOCUMENT["components"]["schemas"]
OPERATIONS = sorted((m.upper(), path) for path, ops in DOCUMENT["paths"].items() for m in ops)


# ---------------------------------------------------------------------------------------
# What an attacker sends


@dataclass(frozen=True)
class Raw:
    """Sent exactly as written: already escaped in a URL or a form, verbatim in JSON."""

    text: str


LONG = "x" * 10_000
DEEP_KEY_DEPTH = 1_000
HOSTILE_TEXT: list[str] = [
    "\x00",
    "main\x00",
    "README.md\x00.png",
    str(2**63),
    str(2**63 - 1),
    str(-(2**63) - 1),
    "9" * 20,
    "-1",
    "0",
    "²",
    "٣",
    "１２",
    "¹²³",
    LONG,
    "é" * 10_000,
    "",
    " ",
    "\n",
    "\r\n",
    "\t",
    "\u202e",
    "\ufeff1",
    "🔥",
    "..",
    "../../../../etc/passwd",
    "a/../../b",
    ".git",
    ".git/config",
    "HEAD",
    "refs/heads/main",
    "main~1",
    "main^{tree}",
    "@{-1}",
    "main..feature",
    ":README.md",
    "-h",
    "--output=/tmp/kiln-fuzz",
    "*",
    "%",
    "%00",
    "\\",
    "/",
    "//",
    "a" * 256,
    "null",
    "true",
    "[]",
    "{}",
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "1e5",
    "0x10",
    "+1",
    " 1",
    "0000-00-00",
    "2024-02-30",
    "9999-12-31T23:59:59Z",
    "-0001-01-01",
]
# Escapes a URL path may carry: invalid UTF-8, NUL, dot segments and slashes in disguise.
HOSTILE_PATH: list[Raw] = [
    Raw("%FF"),
    Raw("%C0%AF"),
    Raw("%00"),
    Raw("%2e%2e"),
    Raw("..%2F..%2Fetc%2Fpasswd"),
    Raw("%252F"),
    Raw(".git%2Fconfig"),
    Raw("a%2F%2Fb"),
]
HOSTILE_JSON: list[Any] = [
    2**63,
    2**64,
    10**20,
    -(2**63) - 1,
    1e308,
    -1,
    0,
    0.5,
    True,
    False,
    None,
    [],
    {},
    [None],
    {"": ""},
    Raw("[" * 1_000 + "]" * 1_000),
    Raw('{"a":' * 1_000 + "1" + "}" * 1_000),
    Raw("1" * 400),
]


def _deep_key(head: str, part: str = "b") -> str:
    return head + f"[{part}]" * DEEP_KEY_DEPTH


# Pairs added to a query or a form besides the declared parameters.
HOSTILE_PAIRS: list[list[tuple[str | Raw, str | Raw]]] = [
    [(_deep_key("a"), "1")],
    [(_deep_key("custom_attributes"), "1")],
    [("a" + "[]" * DEEP_KEY_DEPTH, "1")],
    [("[" * DEEP_KEY_DEPTH, "1")],
    [("a" + "[" * DEEP_KEY_DEPTH, "1")],
    [("x[]", "1")] * 2_000,
    [("k" * 10_000, "v")],
    [("a\x00", "\x00")],
    [("sudo", "²")],
    [("sudo", str(2**63))],
    [("private_token", "\x00")],
    [("page", "²")],
    [("per_page", str(2**63))],
    [("service", "git-upload-pack")],
    [("service", "git-receive-pack")],
    [("service", "\x00")],
    [("ref", Raw("%FF%FE"))],
    [("search", Raw("%ED%A0%80"))],
    [(Raw("%C0%AF"), "1")],
]
# Credentials and request headers an answer depends on, spelled as no client would.
HOSTILE_HEADERS: list[tuple[str, str]] = [
    ("Private-Token", "\x00"),
    ("Private-Token", "²"),
    ("Private-Token", LONG),
    ("Authorization", "Bearer \x00"),
    ("Authorization", "Bearer " + LONG),
    ("Authorization", "Basic " + base64.b64encode(b"root:\x00").decode()),
    ("Authorization", "Basic %%%"),
    ("Authorization", "Negotiate"),
    ("Job-Token", "\x00"),
    ("Cookie", "_service_session=\x00"),
    ("Cookie", "_service_session=" + LONG),
    ("Sudo", "\x00"),
    ("Sudo", "a\x00b"),
    ("Sudo", str(2**63)),
    ("Sudo", "٣"),
    ("Sudo", LONG),
    ("Range", "bytes=99999999999999999999-"),
    ("Range", "bytes=5-1"),
    ("If-None-Match", '"\x00"'),
    ("If-Modified-Since", "²"),
    ("Accept-Encoding", "gzip;q=" + "9" * 20),
]
HOSTILE_BODIES: list[tuple[str, bytes]] = [
    ("application/json", b'{"a":'),
    ("application/json", b"[1, 2]"),
    ("application/json", b"\xff\xfe{}"),
    ("application/json", ('{"a":' * 100_000).encode()),
    ("application/x-www-form-urlencoded", b"a=%ff&b=\xff"),
    ("application/x-www-form-urlencoded", _deep_key("a").encode() + b"=1"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data\r\n\r\n"),
    ("multipart/form-data", b"no boundary"),
    ("text/plain", b"hello"),
    ("application/x-git-upload-pack-request", b"0032want " + b"0" * 40 + b"\n00000009done\n"),
    ("application/x-git-receive-pack-request", b"\x00" * 64),
]


# ---------------------------------------------------------------------------------------
# The seeded world


@dataclass
class World:
    """Real objects, and the values that name them: a project with a repository (two
    branches, a tag, a protected branch, an upload, custom attributes, a share, a merge
    request with its version, thread, reaction, events and approval rules, milestones), its
    group, another group, users with tokens, an identity, an access request."""

    tokens: dict[str, str | None]
    values: dict[str, list[str]] = field(default_factory=dict)

    def of(self, name: str) -> list[str]:
        return self.values.get(name, [])


# Paths whose operations get a merge request in their world (it costs a tenth of a second
# and a dozen statements to make: the other operations are fuzzed without one).
REVIEW_PATHS = ("merge_request", "approval", "milestone")


def seed_world(make: Factory, db: Session, client: Any, *, review: bool = True) -> World:
    """Written by the factories, and by the API where only a request makes the thing (an
    upload, an avatar, an impersonation token). The administrator fuzzed as root is one of
    the world's own: root (id 1) is fuzzed as a target too. `review`: with an open merge
    request and what hangs off it."""
    admin = make.admin()
    root_token = make.token(admin, scopes=["api", "sudo"])
    alice, bob, carol = make.user(), make.user(), make.user()
    group = make.group(owners=[alice], visibility="public")
    other = make.group(owners=[alice])
    project = make.project_with_repository(
        owner=admin, namespace=group, visibility="internal", members={bob: 30}
    )
    main = make.commit(project, {"docs/guide.md": "# Guide\n", "src/app.py": "print('hi')\n"}, branch="main")
    feature = make.commit(project, {"feature.txt": "new\n"}, branch="feature", start=main)
    make.tag(project, "v1.0", main)
    full = f"{group.path}/{project.path}"

    def call(token: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
        r = client.request(method, f"{API_PREFIX}{path}", headers={"Private-Token": token}, **kw)
        assert r.status_code < 300, (method, path, r.status_code, r.text)
        return r.json() if r.content else {}

    upload = call(alice.token, "POST", f"/projects/{project.id}/uploads", files={"file": ("shot.png", PNG)})
    secret, filename = upload["url"].split("/")[2:4]
    call(
        root_token,
        "PUT",
        f"/users/{bob.id}",
        data={"provider": "github", "extern_uid": f"bob-{bob.id}"},
        files={"avatar": ("face.png", PNG)},
    )
    for kind, ident in (("users", bob.id), ("groups", group.id), ("projects", project.id)):
        call(root_token, "PUT", f"/{kind}/{ident}/custom_attributes/color", json={"value": "blue"})
    call(root_token, "POST", f"/projects/{project.id}/share", json={"group_id": other.id, "group_access": 30})
    call(carol.token, "POST", f"/projects/{project.id}/access_requests")
    impersonation = call(
        root_token, "POST", f"/users/{bob.id}/impersonation_tokens", json={"name": "fuzz", "scopes": ["api"]}
    )
    pats = db.scalars(
        select(PersonalAccessToken.id).where(PersonalAccessToken.user_id.in_([alice.id, bob.id]))
    ).all()
    review = _seed_merge_request(make, project, group, alice, bob, call, root_token) if review else {}
    blob = _blob_id(make, project.id, "README.md")
    users = [str(bob.id), str(alice.id), str(carol.id)]
    refs = ["main", "feature", "v1.0", main, main[:8], feature]
    paths = ["README.md", "docs/guide.md", "docs", "src/app.py"]
    groups = [str(group.id), group.path, str(other.id)]
    values = {
        "project": [str(project.id), full],
        "group": groups,
        "user": [*users, "1", bob.username],
        "namespace": [*groups, alice.username],
        "user_id": users,
        "user_ids": users,
        "username": [bob.username, alice.username],
        "branch": ["main", "feature"],
        "start_branch": ["main", "feature"],
        "name": ["main", "feature", "feat*"],
        "tag_name": ["v1.0"],
        "sha": [*refs, blob],
        "ref": refs,
        "ref_name": refs,
        "from": refs,
        "to": refs,
        "start_sha": [main],
        "last_commit_id": [main],
        "file_path": paths,
        "path": paths,
        "previous_path": paths,
        "key": ["color"],
        "token_id": [str(i) for i in pats] + [str(impersonation["id"])],
        "group_id": groups,
        "namespace_id": groups,
        "parent_id": groups,
        "from_project_id": [str(project.id)],
        "start_project": [str(project.id)],
        "provider": ["github"],
        "extern_uid": [f"bob-{bob.id}"],
        "secret": [secret],
        "filename": [filename, "face.png"],
        "full": [
            f"{full}.git/info/refs",
            f"{full}.git/git-upload-pack",
            f"{full}.git/git-receive-pack",
            f"{full}/uploads/{secret}/{filename}",
        ],
        "sudo": [bob.username, str(alice.id)],
        "login": [alice.username, alice.email],
        "password": [DEFAULT_PASSWORD],
        "grant_type": ["password", "refresh_token"],
        "email": [f"new-{bob.id}@example.com"],
        **review,
    }
    db.commit()  # nothing of the world is left in a savepoint of the test's session
    return World(tokens={"root": root_token, "user": alice.token, "anonymous": None}, values=values)


def _seed_merge_request(
    make: Factory,
    project: Any,
    group: Any,
    alice: Any,
    bob: Any,
    call: Callable[..., dict[str, Any]],
    root_token: str,
) -> dict[str, list[str]]:
    """An open merge request from `feature` into `main` (with its first version), planned for
    a milestone and labelled through the API (so it has label and milestone events), with a
    thread, an emoji reaction and approval rules of its own and of the project: the values
    that name them, so that merge request routes reach a real one."""
    milestone = make.milestone(project=project, title="v1")
    group_milestone = make.milestone(group=group, title="q1")
    make.label(project=project, title="bug")
    mr = make.merge_request(
        project, alice, source_branch="feature", target_branch="main", title="Add feature", reviewers=[bob]
    )
    mr_url = f"/projects/{project.id}/merge_requests/{mr.iid}"
    call(alice.token, "PUT", mr_url, json={"add_labels": "bug", "milestone_id": milestone.id})
    thread = call(alice.token, "POST", f"{mr_url}/discussions", json={"body": "Why? See #1 and !1"})
    award = call(alice.token, "POST", f"{mr_url}/award_emoji", json={"name": "thumbsup"})
    project_rule = call(
        root_token,
        "POST",
        f"/projects/{project.id}/approval_rules",
        json={"name": "reviewers", "approvals_required": 1, "user_ids": [bob.id]},
    )
    mr_rule = call(
        root_token, "POST", f"{mr_url}/approval_rules", json={"name": "extra", "approvals_required": 1}
    )
    events = [
        str(e["id"])
        for kind in ("label", "milestone")
        for e in call(alice.token, "GET", f"{mr_url}/resource_{kind}_events")
    ]
    return {
        "merge_request_iid": [str(mr.iid)],
        "version_id": [str(mr.latest_diff_id)],
        "approval_rule_id": [str(mr_rule["id"]), str(project_rule["id"])],
        "discussion_id": [thread["id"]],
        "note_id": [str(thread["notes"][0]["id"])],
        "award_id": [str(award["id"])],
        "event_id": events,
        "milestone_id": [str(milestone.id), str(group_milestone.id)],
        "source_branch": ["feature"],
        "target_branch": ["main"],
    }


def _blob_id(make: Factory, project_id: int, path: str) -> str:
    repo = open_repository(make.settings, project_id)
    return str(repo.revparse_single(f"HEAD:{path}").id)


# Which world values a path's `{id}` names, by the collection it follows.
_ID_OF = {
    "projects": "project",
    "project": "project",
    "groups": "group",
    "users": "user",
    "namespaces": "namespace",
}


def _vocabulary(path: str, name: str) -> str:
    if name != "id":
        return name
    before = path.split("/{id}", 1)[0].rsplit("/", 1)[-1]
    return _ID_OF.get(before, name)


# ---------------------------------------------------------------------------------------
# Values from the document's schemas


_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {}
# Text as names and paths are spelled, which most fields take, before any text at all.
PLAIN = st.from_regex(r"[a-z][a-z0-9_.-]{0,15}", fullmatch=True)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values a schema allows, for the JSON Schema kiln's models emit (types, anyOf, enum,
    bounds, formats, items, properties, additionalProperties, references)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = _from_schema(schema)
    return _STRATEGIES[key]


def _from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        target = COMPONENTS[schema["$ref"].rsplit("/", 1)[-1]]
        return st.deferred(lambda: from_schema(target))
    if "anyOf" in schema:
        return st.one_of([from_schema(s) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "string":
        form = schema.get("format")
        if form == "date":
            return st.dates().map(lambda d: d.isoformat())
        if form == "date-time":
            return st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat())
        return st.one_of(PLAIN, st.text(max_size=20))
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema.get("items", {}))
        return st.one_of(st.lists(items, min_size=1, max_size=3), st.just([]))
    if kind == "object":
        props = schema.get("properties", {})
        if props:
            required = set(schema.get("required", []))
            return st.fixed_dictionaries(
                {k: from_schema(v) for k, v in props.items() if k in required},
                optional={k: from_schema(v) for k, v in props.items() if k not in required},
            )
        extra = schema.get("additionalProperties", {})
        return st.dictionaries(
            st.text(max_size=8), from_schema(extra if isinstance(extra, dict) else {}), max_size=3
        )
    return st.one_of(st.none(), st.text(max_size=8), st.integers())


# ---------------------------------------------------------------------------------------
# Requests


@dataclass
class Sent:
    """One request as the fuzzer made it, and how to show it."""

    caller: str
    method: str
    target: str
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    body: bytes | None = None
    files: list[tuple[str, Any]] | None = None

    def describe(self) -> str:
        shown = self.target if len(self.target) <= 300 else self.target[:300] + f"…({len(self.target)} chars)"
        text = f"{self.caller}: {self.method} {shown}"
        if self.headers:
            text += f" headers={self.headers}"
        if self.body is not None:
            body = self.body[:300] + (b"..." if len(self.body) > 300 else b"")
            text += f" [{self.content_type}] {body!r}"
        if self.files is not None:
            text += (
                f" multipart={[(k, v if not isinstance(v, tuple) else v[:2]) for k, v in self.files][:10]}"
            )
        return text


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, Raw):
        return value.text
    return str(value)


def _part(value: Any) -> str:
    """A multipart field's name or value: an escape meant for a URL, unescaped."""
    return unquote(value.text) if isinstance(value, Raw) else _text(value)


def _escaped(value: str | Raw, safe: str = "") -> str:
    return value.text if isinstance(value, Raw) else quote(value, safe=safe)


def rack_pairs(name: str, value: Any, comma_lists: bool = False) -> list[tuple[str, Any]]:
    """A value as Rack reads it from a query or a form: `a[]=1`, `h[k]=v`, `a[][k]=v`."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in rack_pairs(f"{name}[{k}]", v)]
    if isinstance(value, list):
        if comma_lists and all(not isinstance(v, dict | list) for v in value):
            return [(name, ",".join(_text(v) for v in value))]
        pairs: list[tuple[str, Any]] = []
        for item in value:
            if isinstance(item, dict):
                pairs += [pair for k, v in item.items() for pair in rack_pairs(f"{name}[][{k}]", v)]
            else:
                pairs.append((f"{name}[]", item))
        return pairs
    return [(name, value)]


def urlencoded(pairs: list[tuple[str, Any]]) -> str:
    return "&".join(
        f"{_escaped(k if isinstance(k, Raw) else str(k), '[]')}={_escaped(_as_raw(v))}" for k, v in pairs
    )


def _as_raw(value: Any) -> str | Raw:
    return value if isinstance(value, Raw) else _text(value)


def json_text(value: Any) -> str:
    """JSON with `Raw` pieces verbatim (bodies nested past any parser's depth, numbers past
    any integer type)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    return json.dumps(value)


class Draw:
    """Draws one request for an operation from hypothesis' data and the current world."""

    def __init__(self, data: st.DataObject, world: World) -> None:
        self.data = data
        self.world = world

    def __call__(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def chance(self, one_in: int) -> bool:
        """True once in `one_in`; False is the simpler choice, so hypothesis' first and
        simplest examples are the plainest requests."""
        return self(st.sampled_from([False] * (one_in - 1) + [True]))

    def value(self, name: str, schema: dict[str, Any], *, as_json: bool = False) -> Any:
        """Often a real object's value, as often what the schema allows (a model's fields
        drawn the same way, by their names), sometimes hostile."""
        real = self.world.of(name)
        choice = self(
            st.sampled_from(
                ["real", "real", "real", "schema", "schema", "hostile"]
                if real
                else ["schema", "schema", "schema", "schema", "hostile"]
            )
        )
        if choice == "real":
            return self(st.sampled_from(real))
        if choice == "hostile":
            return self(st.sampled_from(HOSTILE_TEXT + HOSTILE_JSON if as_json else HOSTILE_TEXT))
        schema = self.option(schema)
        model = self.model(schema)
        if model is not None:
            return self.fields(model.get("properties", {}), set(model.get("required", [])), as_json=as_json)
        items = self.model(schema.get("items", {})) if schema.get("type") == "array" else None
        if items is not None:
            return [
                self.fields(items.get("properties", {}), set(items.get("required", [])), as_json=as_json)
                for _ in range(self(st.integers(1, 3)))
            ]
        return self(from_schema(schema))

    def option(self, schema: dict[str, Any]) -> dict[str, Any]:
        """One of an anyOf's schemas, null last."""
        options = schema.get("anyOf")
        if not options:
            return schema
        return self(st.sampled_from(sorted(options, key=lambda o: o.get("type") == "null")))

    @staticmethod
    def model(schema: dict[str, Any]) -> dict[str, Any] | None:
        """The model a schema names, if it is one."""
        ref = schema.get("$ref")
        if ref is not None:
            return COMPONENTS[ref.rsplit("/", 1)[-1]]
        return schema if schema.get("properties") else None

    def path_value(self, vocabulary: str, schema: dict[str, Any]) -> str:
        safe = "/" if vocabulary == "full" else ""
        real = self.world.of(vocabulary)
        choice = self(
            st.sampled_from(
                ["real"] * 6 + ["hostile", "path", "schema"] if real else ["hostile", "path", "schema"]
            )
        )
        if choice == "real":
            return quote(self(st.sampled_from(real)), safe=safe)
        if choice == "path":
            return self(st.sampled_from(HOSTILE_PATH)).text
        if choice == "hostile":
            return quote(self(st.sampled_from(HOSTILE_TEXT)), safe="")
        return quote(_text(self(from_schema(schema))), safe=safe)

    def fields(self, props: dict[str, Any], required: set[str], *, as_json: bool) -> dict[str, Any]:
        """Required fields mostly given, others now and then, so that most requests pass the
        parameter checks of most fields and the handler sees them."""
        chosen: dict[str, Any] = {}
        for name, schema in props.items():
            wanted = not self.chance(10) if name in required else self.chance(5)
            if wanted:
                chosen[name] = self.value(name, schema, as_json=as_json)
        return chosen


def draw_request(draw: Draw, caller: str, method: str, path: str, op: dict[str, Any]) -> Sent:
    target = path
    query: list[tuple[str, Any]] = []
    headers: dict[str, str] = {}
    for param in op["parameters"]:
        name = param["name"]
        if param["in"] == "path":
            target = target.replace(
                "{" + name + "}", draw.path_value(_vocabulary(path, name), param["schema"]), 1
            )
        elif param["in"] == "query":
            wanted = not draw.chance(10) if param["required"] else draw.chance(5)
            if wanted:
                query += rack_pairs(name, draw.value(name, param["schema"]), comma_lists=not draw.chance(3))
        elif param["in"] == "header" and name == "Sudo" and caller == "root" and draw.chance(6):
            sudo = draw.value("sudo", param["schema"])
            headers[name] = _text(sudo).replace("\r", "").replace("\n", "")
    if draw.chance(5):
        query += draw(st.sampled_from(HOSTILE_PAIRS))
    if query:
        target += "?" + urlencoded(query)
    assume(len(target) < 65_000)  # no HTTP client sends a longer URL
    token = draw.world.tokens[caller]
    if token is not None:
        headers["Private-Token"] = token
    if draw.chance(10):
        name, value = draw(st.sampled_from(HOSTILE_HEADERS))
        headers[name] = value
    # HEAD is answered wherever GET is, with the GET's headers and no body.
    sent = Sent(caller, "HEAD" if method == "GET" and draw.chance(10) else method, target, headers)
    if method in READS or method == "DELETE":
        return sent
    body = op.get("requestBody")
    if draw.chance(10) or (body is None and draw.chance(4)):
        sent.content_type, sent.body = draw(st.sampled_from(HOSTILE_BODIES))
        return sent
    if body is None:
        return sent
    schema = body["content"]["application/json"]["schema"]
    encoding = draw(st.sampled_from(["json", "json", "form", "multipart"]))
    fields = draw.fields(schema["properties"], set(schema["required"]), as_json=encoding == "json")
    if encoding == "json":
        sent.content_type, sent.body = "application/json", json_text(fields).encode()
        return sent
    pairs = [pair for k, v in fields.items() for pair in rack_pairs(k, v)]
    if draw.chance(5):
        pairs += draw(st.sampled_from(HOSTILE_PAIRS))
    if encoding == "form":
        sent.content_type, sent.body = "application/x-www-form-urlencoded", urlencoded(pairs).encode()
        return sent
    binary = {k for k, v in schema["properties"].items() if v.get("format") == "binary"}
    files: list[tuple[str, Any]] = []
    for k, v in pairs:
        if k in binary:
            name = draw(st.sampled_from(["shot.png", "../../x.png", "a\x00.png", LONG + ".png", "", "²"]))
            files.append((k, (name, PNG, "image/png")))
        else:
            files.append((_part(k), (None, _part(v).encode())))
    sent.files = files
    return sent


def send(client: Any, sent: Sent) -> Any:
    headers: dict[str, str | bytes] = {k: v.encode() for k, v in sent.headers.items()}  # UTF-8, as sent
    if sent.files is not None:
        return client.request(
            sent.method, sent.target, headers=headers, files=sent.files or {"": (None, b"")}
        )
    if sent.body is not None:
        headers["Content-Type"] = sent.content_type or ""
        return client.request(sent.method, sent.target, headers=headers, content=sent.body)
    return client.request(sent.method, sent.target, headers=headers)


# ---------------------------------------------------------------------------------------
# What went wrong


@dataclass
class Finding:
    """What went wrong, once per operation and signature: the exception's type and the
    innermost functions of kiln it passed through (or what the answer lacked)."""

    operation: str
    signature: str
    status: int
    detail: str
    request: str
    error: str = ""
    frames: tuple[str, ...] = ()

    def known(self) -> bool:
        return any(k.covers(self) for k in KNOWN_5XX)

    def show(self) -> str:
        return f"{self.operation}: {self.status} {self.signature}\n    {self.detail}\n    {self.request}"


class Raised(logging.Handler):
    """The exceptions kiln logged while answering (its 500 handler logs each)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def raised() -> Iterator[Raised]:
    handler = Raised()
    logger = logging.getLogger("kiln")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _in_kiln(exc: BaseException) -> bool:
    return any("/kiln/" in f.filename for f in traceback.extract_tb(exc.__traceback__))


# Modules every statement passes through: a frame there says nothing of which request failed.
PLUMBING = ("/kiln/queries/reads.py", "/kiln/db.py")


def failure(operation: str, status: int, exc: BaseException, sent: Sent) -> Finding:
    """A 5xx from the exception behind it: signed by its type and the three innermost
    functions of kiln it went through, past the statement runners every query shares (so
    distinct paths to one driver error stay apart)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/kiln/" in f.filename and "/site-packages/" not in f.filename]
    error = type(exc).__name__
    named = [f for f in ours if not f.filename.endswith(PLUMBING)] or ours
    path = " < ".join(f.name for f in reversed(named[-3:])) or "?"
    shown = [*named[-3:], *frames[-1:]]
    places = " / ".join(
        dict.fromkeys(f"{f.filename.split('/kiln/')[-1]}:{f.lineno} in {f.name}" for f in shown)
    )
    message = str(exc).splitlines()[0][:200] if str(exc) else ""
    return Finding(
        operation,
        f"{error} in {path}",
        status,
        f"{error}: {message} ({places})",
        sent.describe(),
        error,
        tuple(f.name for f in ours),
    )


def judge(
    operation: str, sent: Sent, response: Any, crash: BaseException | None, raised: Raised
) -> Finding | None:
    if crash is not None:
        return failure(operation, 500, crash, sent)
    status = response.status_code
    if status >= 500:
        errors = [r.exc_info[1] for r in raised.records if r.exc_info and r.exc_info[1] is not None]
        if errors:
            return failure(operation, status, errors[-1], sent)
        message = raised.records[-1].getMessage() if raised.records else response.text[:200]
        return Finding(operation, f"{status} answer", status, message, sent.describe())
    if (
        status >= 400
        and sent.method != "HEAD"
        and not (
            operation.endswith(" " + GIT)
            and response.headers.get("content-type", "").startswith("text/plain")
        )
    ):
        try:
            response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type")
            return Finding(
                operation, f"{status} without JSON ({kind})", status, response.text[:200], sent.describe()
            )
    return None


def record(findings: dict[str, Finding], found: Finding) -> None:
    """One finding per signature: the one with the shortest request."""
    held = findings.get(found.signature)
    if held is None or len(found.request) < len(held.request):
        findings[found.signature] = found


# ---------------------------------------------------------------------------------------
# The tests


def _review(request: pytest.FixtureRequest) -> bool:
    """Whether the test's operation gets a merge request in its world (REVIEW_PATHS)."""
    callspec = getattr(request.node, "callspec", None)
    path = str(callspec.params.get("path", "")) if callspec is not None else ""
    return not path or any(word in path for word in REVIEW_PATHS)


@pytest.fixture
def world_maker(
    make: Factory, db: Session, client: Any, request: pytest.FixtureRequest
) -> Callable[[], World]:
    review = _review(request)
    return lambda: seed_world(make, db, client, review=review)


Rows = dict[str, dict[tuple[Any, ...], dict[str, Any]]]


def _rows(conn: Connection) -> Rows:
    """Every row of every table, by table name and primary key."""
    rows: Rows = {}
    for table in Base.metadata.sorted_tables:
        key = list(table.primary_key.columns)
        rows[table.name] = {
            tuple(row[c.name] for c in key): dict(row) for row in conn.execute(select(table)).mappings()
        }
    return rows


@dataclass
class Frozen:
    """A seeded world as it was written, kept for the rest of the worker: the rows seeding
    added to the baseline (and the baseline rows it changed or deleted), where PostgreSQL's
    sequences stood after it, and a copy of its data dir. Written again into a test's
    rolled-back transaction, it is the same world, at a fraction of a seeding's cost."""

    world: World
    data: Path
    added: list[tuple[Table, list[dict[str, Any]]]]
    changed: list[tuple[Table, list[dict[str, Any]]]]
    removed: list[tuple[Table, list[dict[str, Any]]]]
    sequences: str | None

    @classmethod
    def seed(cls, make_world: Callable[[], World], conn: Connection, runtime: Runtime, data: Path) -> Frozen:
        """Seeds a world in the test's transaction and keeps what it wrote."""
        before = _rows(conn)
        world = make_world()
        after = _rows(conn)
        added, changed, removed = [], [], []
        for table in Base.metadata.sorted_tables:
            old, new = before[table.name], after[table.name]
            if rows := [row for key, row in new.items() if key not in old]:
                added.append((table, rows))
            if rows := [row for key, row in new.items() if key in old and old[key] != row]:
                changed.append((table, rows))
            if rows := [row for key, row in old.items() if key not in new]:
                removed.insert(0, (table, rows))
        shutil.copytree(runtime.settings.data_dir, data, symlinks=True)
        return cls(world, data, added, changed, removed, _sequences(conn))

    def write(self, conn: Connection) -> None:
        """The world's rows into the test's transaction (which holds the baseline)."""
        for table, rows in self.added:
            conn.execute(table.insert(), rows)
        for table, rows in self.changed:
            for row in rows:
                conn.execute(table.update().where(*_key_of(table, row)).values(row))
        for table, rows in self.removed:
            for row in rows:
                conn.execute(table.delete().where(*_key_of(table, row)))
        if self.sequences:
            conn.exec_driver_sql(self.sequences)


def _key_of(table: Table, row: dict[str, Any]) -> list[Any]:
    return [c == row[c.name] for c in table.primary_key.columns]


def _sequences(conn: Connection) -> str | None:
    """On PostgreSQL, one statement putting every sequence where it stands now (the test's
    rewind puts them back to the baseline's)."""
    return sequence_positions(conn) if conn.dialect.name == "postgresql" else None


@pytest.fixture(scope="session")
def frozen_worlds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[bool, Frozen]]:
    """This worker's seeded worlds (with and without a merge request), each seeded once."""
    return tmp_path_factory.mktemp("fuzz-worlds"), {}


class Arena:
    """A seeded world, and the way back to it after an example wrote: the database to a
    savepoint taken once the world was written, the data dir to a fresh copy of the world's
    (at a new path, so that no repository kiln holds open is one an example changed)."""

    def __init__(self, world: World, db: Session, runtime: Runtime, snapshot: Path) -> None:
        self.world = world
        self.runtime = runtime
        self.conn = cast(Connection, db.get_bind())
        live = runtime.settings.data_dir
        self.base = live.with_name(live.name + "-fuzz")
        self.snapshot = snapshot
        self.copies = 0
        self._fresh()
        self.savepoint = self.conn.begin_nested()

    def _fresh(self) -> None:
        fresh = self.base / str(self.copies)
        shutil.copytree(self.snapshot, fresh, symlinks=True)
        self.runtime.settings = self.runtime.settings.model_copy(update={"data_dir": fresh})

    def restore(self) -> dict[str, str]:
        """Back to the world; returns what `git fsck` finds wrong with the repositories the
        examples since the last restore left."""
        left = self.runtime.settings.data_dir
        unsound = unsound_repositories(left / "repositories")
        self.savepoint.rollback()
        self.copies += 1
        self._fresh()
        self.savepoint = self.conn.begin_nested()
        return unsound


@pytest.fixture
def arena(
    world_maker: Callable[[], World],
    db: Session,
    runtime: Runtime,
    frozen_worlds: tuple[Path, dict[bool, Frozen]],
    request: pytest.FixtureRequest,
) -> Arena:
    """The worker's world for this operation: seeded by its first test, written again into
    each later one's transaction (the same rows, the same ids, a copy of the same data dir)."""
    root, kept = frozen_worlds
    review = _review(request)
    conn = cast(Connection, db.get_bind())
    frozen = kept.get(review)
    if frozen is None:
        frozen = kept[review] = Frozen.seed(world_maker, conn, runtime, root / f"review-{review}")
    else:
        frozen.write(conn)
    return Arena(frozen.world, db, runtime, frozen.data)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_fuzz(method: str, path: str, arena: Arena, client: Any, raised: Raised) -> None:
    """As root, as an ordinary user and anonymously, in one world: a world costs more to
    make than a dozen examples, going back to it after a write far less."""
    operation = f"{method} {path}"
    op = DOCUMENT["paths"][path][method.lower()]
    findings: dict[str, Finding] = {}
    for caller in CALLERS:
        statuses = fuzz(operation, op, caller, arena, client, raised, findings)
        _report(operation, caller, statuses)
    _report_findings(findings.values())
    unexpected = [f.show() for f in findings.values() if not f.known()]
    assert not unexpected, "\n".join(unexpected)


def fuzz(
    operation: str,
    op: dict[str, Any],
    caller: str,
    arena: Arena,
    client: Any,
    raised: Raised,
    findings: dict[str, Finding],
) -> Counter[int]:
    """One caller's examples of one operation; what kiln answered, by status."""
    method, path = operation.split(" ", 1)
    statuses: Counter[int] = Counter()
    wrote: list[Sent] = []

    @settings(
        max_examples=examples_for(op),
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @seed(SEED ^ zlib.crc32(f"{operation} {caller}".encode()))
    @given(data=st.data())
    def example(data: st.DataObject) -> None:
        if wrote:
            back(wrote.pop())
        sent = draw_request(Draw(data, arena.world), caller, method, path, op)
        raised.records.clear()
        response, crash = None, None
        try:
            response = send(client, sent)
        except Exception as exc:  # an exception past kiln's own handlers is a 500 too
            if not _in_kiln(exc):
                raise  # the request could not be sent: the fuzzer's own fault
            crash = exc
        finally:
            client.cookies.clear()  # a sign-in's session would change who the next caller is
        statuses[response.status_code if response is not None else 500] += 1
        found = judge(operation, sent, response, crash, raised)
        if found is not None:
            record(findings, found)
        if response is not None and method not in READS and response.status_code < 300:
            wrote.append(sent)

    def back(sent: Sent) -> None:
        for repository, errors in arena.restore().items():
            detail = f"{repository}: {errors.splitlines()[0]}"
            record(findings, Finding(operation, "unsound repository", 0, detail, sent.describe()))

    example()
    if wrote:
        back(wrote.pop())
    return statuses


# An operation that takes no parameter (no path, query or body value to draw: the metrics,
# the version) varies only in credentials and headers: a few examples cover that.
PARAMETERLESS_EXAMPLES = 3


def examples_for(op: dict[str, Any]) -> int:
    if op.get("parameters") or op.get("requestBody"):
        return EXAMPLES
    return min(EXAMPLES, PARAMETERLESS_EXAMPLES)


def _report(operation: str, caller: str, statuses: Counter[int]) -> None:
    """What the run answered, per operation and caller (how deep it reached), as JSON lines."""
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as out:
            out.write(
                json.dumps({"operation": operation, "caller": caller, "statuses": dict(statuses)}) + "\n"
            )


def _report_findings(findings: Iterable[Finding]) -> None:
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as out:
            for f in findings:
                out.write(json.dumps(f.__dict__) + "\n")


@pytest.mark.parametrize("known", KNOWN_5XX, ids=[f"{k.operation} {k.error} {k.where}" for k in KNOWN_5XX])
def test_a_known_5xx_still_fails(
    known: Known, world_maker: Callable[[], World], client: Any, raised: Raised, db_kind: str
) -> None:
    """Once kiln answers it below 500, the entry goes from KNOWN_5XX."""
    if db_kind not in known.databases:
        pytest.skip(f"fails on {', '.join(known.databases)} only")
    world = world_maker()
    names = {k: quote(v[0], safe="") for k, v in world.values.items()}
    token = world.tokens[known.caller]
    headers = dict(known.headers) | ({"Private-Token": token} if token else {})
    sent = Sent(known.caller, known.method, known.target.format(**names), headers)
    if known.body is not None:
        sent.content_type, sent.body = "application/json", known.body.encode()
    raised.records.clear()
    response = send(client, sent)
    found = judge(known.operation, sent, response, None, raised)
    assert found is not None, (
        f"{known.operation} answers {response.status_code} now: remove it from KNOWN_5XX"
    )
    assert known.covers(found), found.show()


def test_the_fuzzed_document_is_the_served_one(api: Any) -> None:
    served = api().get("/openapi.json").json()
    served.pop("servers")
    assert served == json.loads(json.dumps(DOCUMENT))
