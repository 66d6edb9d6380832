"""Issue iids stay unique and gap-free when two nodes (two `kiln serve` on one database)
create issues in one project at the same time, and a refused create in between takes no
iid: each project's counter is taken in the transaction that inserts the issue."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.e2e.conftest import ROOT_TOKEN, Server, start_server

pytestmark = pytest.mark.e2e

ROOT = {"Private-Token": ROOT_TOKEN}
THREADS = 8
PER_THREAD = 6
# GitLab's limit on a description is 1,048,576 characters.
TOO_LONG = "x" * 1_048_577


@pytest.fixture(scope="module")
def nodes(
    tmp_path_factory: pytest.TempPathFactory, new_database_url: Callable[[], str | None]
) -> Iterator[tuple[Server, Server]]:
    base = tmp_path_factory.mktemp("iids")
    url = new_database_url()
    first = start_server(base / "data", url, base / "logs", KILN_PROCESSES="1")
    try:
        second = start_server(base / "data", url, base / "logs", KILN_PROCESSES="1")
    except BaseException:
        first.stop()
        raise
    yield first, second
    second.stop()
    first.stop()


def new_project(node: Server) -> int:
    r = httpx.post(f"{node.url}/api/v4/projects", headers=ROOT, json={"name": f"iids-{uuid.uuid4().hex[:8]}"})
    # The node's log goes with a failure: the temporary directory holding it goes with the run.
    assert r.status_code == 201, f"{r.text}\n{node.output()[-4000:]}"
    return int(r.json()["id"])


def create_issue(client: httpx.Client, url: str, project_id: int, title: str) -> httpx.Response:
    return client.post(f"{url}/api/v4/projects/{project_id}/issues", headers=ROOT, json={"title": title})


def listed_iids(url: str, project_id: int) -> list[int]:
    iids: list[int] = []
    page = 1
    while page:
        r = httpx.get(
            f"{url}/api/v4/projects/{project_id}/issues",
            headers=ROOT,
            params={"state": "all", "per_page": 100, "page": page},
        )
        assert r.status_code == 200, r.text
        iids += [issue["iid"] for issue in r.json()]
        page = int(r.headers["X-Next-Page"]) if r.headers.get("X-Next-Page") else 0
    return sorted(iids)


def test_concurrent_creates_through_two_nodes_take_iids_1_to_n(nodes):
    first, second = nodes
    project_id = new_project(first)
    taken: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def writer(n: int) -> None:
        with httpx.Client(timeout=60) as client:
            start.wait()
            for round_ in range(PER_THREAD):
                node = (first, second)[(n + round_) % 2]
                r = create_issue(client, node.url, project_id, f"t{n} r{round_}")
                with lock:
                    if r.status_code == 201:
                        taken.append(r.json()["iid"])
                    else:
                        failures.append(f"{r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    total = THREADS * PER_THREAD
    assert sorted(taken) == list(range(1, total + 1))
    # Both nodes list what both created.
    assert listed_iids(first.url, project_id) == list(range(1, total + 1))
    assert listed_iids(second.url, project_id) == list(range(1, total + 1))


def test_a_refused_create_in_between_leaves_no_gap(nodes):
    first, second = nodes
    project_id = new_project(second)
    with httpx.Client(timeout=60) as client:
        assert create_issue(client, first.url, project_id, "one").json()["iid"] == 1
        refused = client.post(
            f"{second.url}/api/v4/projects/{project_id}/issues",
            headers=ROOT,
            json={"title": "too long", "description": TOO_LONG},
        )
        assert refused.status_code == 400, refused.text
        assert create_issue(client, second.url, project_id, "two").json()["iid"] == 2
        assert create_issue(client, first.url, project_id, "three").json()["iid"] == 3
    assert listed_iids(first.url, project_id) == [1, 2, 3]


def test_refused_creates_among_concurrent_ones_leave_no_gap(nodes):
    first, second = nodes
    project_id = new_project(first)
    created: list[int] = []
    statuses: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(4)

    def writer(n: int) -> None:
        with httpx.Client(timeout=60) as client:
            start.wait()
            for round_ in range(4):
                node = (first, second)[(n + round_) % 2]
                body: dict[str, str] = {"title": f"w{n} r{round_}"}
                if (n + round_) % 3 == 0:
                    body["description"] = TOO_LONG
                r = client.post(f"{node.url}/api/v4/projects/{project_id}/issues", headers=ROOT, json=body)
                with lock:
                    statuses.append(r.status_code)
                    if r.status_code == 201:
                        created.append(r.json()["iid"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(statuses) == {201, 400}
    assert sorted(created) == list(range(1, len(created) + 1))
