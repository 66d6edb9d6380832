"""Bodies larger than kiln reads: with or without Content-Length, on API routes and on git's
fetch route alike, kiln stops reading at the limit and answers 413. Only a push's pack
streams past it (to git, bounded by max_push_bytes)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.asgi import Exchange, exchange
from tests.repositories import new_project

LIMIT = 1024 * 1024
CHUNK = 64 * 1024
HUGE = 150 * 1024 * 1024
UPLOAD_PACK_REQUEST = b"application/x-git-upload-pack-request"


def stream_body(
    client: Any,
    path: str,
    content_type: bytes,
    total: int,
    headers: list[tuple[bytes, bytes]] = (),
    *,
    first: bytes = b"",
    filler: bytes = b"0" * CHUNK,
) -> Exchange:
    """POST `first` then `filler` again and again, `total` bytes in all, as a chunked body
    handed to kiln only as it asks for it."""

    def body(read: int) -> bytes | None:
        if read >= total:
            return None
        return first if read == 0 and first else filler

    sent = [(b"content-type", content_type), (b"transfer-encoding", b"chunked"), *headers]
    return exchange(client, "POST", path, sent, body=body)


@pytest.fixture
def limited(configure: Any) -> int:
    configure(max_request_body_bytes=LIMIT)
    return LIMIT


@pytest.fixture
def public_project(api: Any, make: Any) -> dict[str, Any]:
    return new_project(api, make, make.user(), visibility="public")


def pkt(line: bytes) -> bytes:
    return b"%04x" % (len(line) + 4) + line


# A protocol v2 request git keeps reading to its end: ls-refs with ever more ref prefixes.
LS_REFS = pkt(b"command=ls-refs\n") + b"0001"
REF_PREFIXES = pkt(b"ref-prefix refs/heads/" + b"x" * 200 + b"\n") * (CHUNK // 208)
ROOT = [(b"private-token", b"kiln-test-root-token")]


def test_a_chunked_api_body_past_the_limit_is_413_and_read_no_further(client, limited):
    seen = stream_body(client, "/api/v4/projects", b"application/json", HUGE, ROOT)
    assert seen.status == 413
    assert seen.json() == {"message": "413 Request Entity Too Large"}
    assert seen.read <= limited + CHUNK


def test_an_anonymous_fetch_body_past_the_limit_is_413_and_read_no_further(client, limited, public_project):
    path = f"/{public_project['path_with_namespace']}.git/git-upload-pack"
    protocol = [(b"git-protocol", b"version=2")]
    seen = stream_body(client, path, UPLOAD_PACK_REQUEST, HUGE, protocol, first=LS_REFS, filler=REF_PREFIXES)
    assert seen.status == 413
    assert seen.read <= limited + CHUNK


def test_a_fetch_body_to_an_api_path_ending_like_git_is_bounded(client, limited, public_project):
    """A file named `git-upload-pack` makes an API path end like git's fetch route; its body,
    sent with a fetch's type, is read like any other: counted and cut at the limit."""
    path = f"/api/v4/projects/{public_project['id']}/repository/files/git-upload-pack"
    seen = stream_body(client, path, UPLOAD_PACK_REQUEST, HUGE, ROOT)
    assert seen.status == 413
    assert seen.json() == {"message": "413 Request Entity Too Large"}
    assert seen.read <= limited + CHUNK


def test_a_pack_content_type_on_an_api_route_does_not_lift_the_limit(client, limited):
    seen = stream_body(client, "/api/v4/projects", b"application/x-git-receive-pack-request", HUGE, ROOT)
    assert seen.status == 413
    assert seen.json() == {"message": "413 Request Entity Too Large"}
    assert seen.read <= limited + CHUNK


def test_a_declared_length_past_the_limit_is_413_before_any_byte_is_read(client, limited):
    seen = stream_body(
        client,
        "/api/v4/projects",
        b"application/json",
        HUGE,
        headers=[(b"content-length", str(HUGE).encode())],
    )
    assert seen.status == 413
    assert seen.read == 0


def test_a_large_json_body_is_parsed_and_validated_off_the_event_loop(client, api, make, monkeypatch):
    """Parsing a body costs time in proportion to its size: past OFF_LOOP_BYTES it runs in a
    thread, so the loop serving every other request never waits on it."""
    from kiln.api import _params
    from kiln.schemas.commits import CommitCreate

    where: dict[str, str] = {}
    loads, validate = _params.orjson.loads, CommitCreate.model_validate.__func__

    def spying_loads(body: bytes) -> Any:
        where["parsed"] = threading.current_thread().name
        return loads(body)

    def spying_validate(cls: type, raw: Any, **kw: Any) -> Any:
        where["validated"] = threading.current_thread().name
        return validate(cls, raw, **kw)

    monkeypatch.setattr(_params.orjson, "loads", spying_loads)
    monkeypatch.setattr(CommitCreate, "model_validate", classmethod(spying_validate))
    owner = make.user()
    project = new_project(api, make, owner)
    content = "x" * (_params.OFF_LOOP_BYTES + 1)
    r = api(owner).post(
        f"/projects/{project['id']}/repository/commits",
        json={
            "branch": "main",
            "commit_message": "m",
            "actions": [{"action": "create", "file_path": "big.txt", "content": content}],
        },
    )
    assert r.status_code == 201, r.text
    loop_thread = client.blocking_portal.call(lambda: threading.current_thread().name)
    assert where["parsed"] != loop_thread
    assert where["validated"] != loop_thread


def test_a_json_body_past_the_json_limit_is_413_before_it_is_parsed(client, configure):
    configure(max_json_body_bytes=LIMIT)
    seen = stream_body(client, "/api/v4/projects", b"application/json; charset=utf-8", HUGE, ROOT)
    assert seen.status == 413
    assert seen.read <= LIMIT + CHUNK


def test_an_undeclared_body_is_read_as_json_and_bounded_as_json(client, configure):
    configure(max_json_body_bytes=LIMIT)
    seen = exchange(client, "POST", "/api/v4/projects", [*ROOT, (b"content-length", str(LIMIT + 1).encode())])
    assert seen.status == 413
    assert seen.read == 0


def test_a_form_body_is_not_held_to_the_json_limit(client, api, configure):
    configure(max_json_body_bytes=1024)
    r = api("root").post("/projects", data={"name": "form-body", "description": "d" * 1500})
    assert r.status_code == 201, r.text
