"""How xdist hands the tests to its workers (`make test` runs three).

xdist's `load` sends a worker a quarter to a half of what is left each time it runs low: what
lands late in one worker's share becomes the run's tail while the others wait (the fuzzer's
operations ran alone for 25-45 s at the end of a pass). Here a worker holds only a few tests
ahead, so the last one finishes within a test or two of the others. The modules that start
`kiln serve` (tests/e2e) go first, each whole to one worker: their servers, made once per
module, start once, and their long tests are never what is left at the end."""

from __future__ import annotations

from xdist.scheduler import LoadScheduling
from xdist.workermanage import WorkerController

# Tests a worker holds beyond the one it runs: it needs the next to run one (pytest's teardown
# looks ahead), and a few more spare it waiting for the controller between tests.
AHEAD = 4
# Modules whose tests go to one worker together, first.
WHOLE = "tests/e2e/"


class FewAhead(LoadScheduling):
    """`load`, with the tests in the order above and at most AHEAD queued per worker."""

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self.check_schedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = next(iter(self.node2collection.values()))
        ids = self.collection
        first = [i for i, nodeid in enumerate(ids) if nodeid.startswith(WHOLE)]
        rest = [i for i, nodeid in enumerate(ids) if not nodeid.startswith(WHOLE)]
        self.pending[:] = first + rest
        for node in self.nodes:
            self.check_schedule(node)
        if not self.pending:
            for node in self.nodes:
                node.shutdown()

    def check_schedule(self, node: WorkerController, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if not self.pending:
            node.shutdown()
            return
        queued = self.node2pending[node]
        while self.pending and len(queued) < AHEAD:
            self._send_tests(node, self._next_unit())

    def _next_unit(self) -> int:
        """How many of the pending tests go together: a WHOLE module's, or one."""
        assert self.collection is not None
        head = self.collection[self.pending[0]]
        if not head.startswith(WHOLE):
            return 1
        module = head.split("::", 1)[0] + "::"
        size = 1
        while size < len(self.pending) and self.collection[self.pending[size]].startswith(module):
            size += 1
        return size
