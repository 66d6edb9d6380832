"""How the tests are handed to xdist's workers (tests.scheduling), with stand-ins for the
workers: what each is sent, in which order."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.scheduling import AHEAD, FewAhead


class Config:
    """What the scheduler reads of pytest's configuration: three workers."""

    def getvalue(self, name: str) -> Any:
        return {"tx": ["3*popen"]}[name]

    def getoption(self, name: str) -> Any:
        return {"maxschedchunk": None}[name]


class Worker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    "tests/api/test_a.py::test_1",
    "tests/api/test_a.py::test_2",
    "tests/e2e/test_serve.py::test_1",
    "tests/e2e/test_serve.py::test_2",
    "tests/e2e/test_serve.py::test_3",
    "tests/e2e/test_serve.py::test_4",
    "tests/e2e/test_serve.py::test_5",
    "tests/e2e/test_ci.py::test_1",
    *(f"tests/test_b.py::test_{n}" for n in range(20)),
]


def started() -> tuple[FewAhead, list[Worker]]:
    scheduler = FewAhead(Config())  # type: ignore[arg-type]
    workers = [Worker(f"gw{n}") for n in range(3)]
    for worker in workers:
        scheduler.add_node(worker)  # type: ignore[arg-type]
        scheduler.add_node_collection(worker, COLLECTION)  # type: ignore[arg-type]
    scheduler.schedule()
    return scheduler, workers


def names(worker: Worker) -> list[str]:
    return [COLLECTION[i] for i in worker.sent]


def test_end_to_end_modules_go_first_each_whole_to_one_worker():
    _, (first, second, third) = started()
    assert names(first)[:5] == [f"tests/e2e/test_serve.py::test_{n}" for n in range(1, 6)]
    assert names(second)[0] == "tests/e2e/test_ci.py::test_1"
    assert not any("e2e" in name for name in names(second)[1:] + names(third))


def test_a_worker_holds_a_few_tests_ahead_and_gets_one_more_as_each_ends():
    scheduler, (_, second, third) = started()
    assert len(third.sent) == AHEAD
    waiting = len(scheduler.pending)
    scheduler.mark_test_complete(third, third.sent[0])  # type: ignore[arg-type]
    assert (len(third.sent), len(scheduler.pending)) == (AHEAD + 1, waiting - 1)
    assert len(second.sent) == AHEAD


def test_every_test_is_sent_once_and_the_workers_are_told_to_stop_when_none_is_left():
    scheduler, workers = started()
    while scheduler.pending:
        for worker in workers:
            queued = scheduler.node2pending[worker]  # type: ignore[index]
            if queued:
                scheduler.mark_test_complete(worker, queued[0])  # type: ignore[arg-type]
    for worker in workers:
        for index in list(scheduler.node2pending[worker]):  # type: ignore[index]
            scheduler.mark_test_complete(worker, index)  # type: ignore[arg-type]
    assert sorted(i for worker in workers for i in worker.sent) == list(range(len(COLLECTION)))
    assert all(worker.shutting_down for worker in workers)
