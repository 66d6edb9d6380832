"""The runner process: verify the runners, then poll for jobs in N slots, run them, and stop
gracefully (running jobs finish) on the first SIGINT/SIGTERM, at once on the second."""

from __future__ import annotations

import itertools
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from kiln.runner import info
from kiln.runner.client import Client, ProtocolError
from kiln.runner.config import Config, RunnerEntry
from kiln.runner.display import Display, PlainDisplay
from kiln.runner.job import JobRun, JobSettings, Outcome


@dataclass
class RunnerState:
    """A runner being polled: its client and the queue version the server last gave it."""

    entry: RunnerEntry
    client: Client
    last_update: str | None = None
    disabled: bool = False


@dataclass
class Results:
    """What the process did (tests and `--once` read it)."""

    outcomes: list[tuple[int, Outcome]] = field(default_factory=list)


class RunnerProcess:
    """Polls every configured runner round-robin from `concurrent` slots."""

    def __init__(
        self,
        config: Config,
        *,
        concurrent: int | None = None,
        once: bool = False,
        poll_interval: float | None = None,
        display: Display | None = None,
        settings: JobSettings | None = None,
        client_factory: Callable[[str], Client] = Client,
    ) -> None:
        if not config.runners:
            raise ProtocolError(0, "no runner is registered in this configuration")
        self.config = config
        self.concurrent = 1 if once else max(1, concurrent or config.concurrent)
        self.once = once
        self.poll_interval = poll_interval if poll_interval is not None else config.check_interval
        self.display = display or PlainDisplay()
        self.settings = settings or JobSettings()
        clients: dict[str, Client] = {}
        for entry in config.runners:
            clients.setdefault(entry.url, client_factory(entry.url))
        self.clients = clients
        self.runners = [RunnerState(entry, clients[entry.url]) for entry in config.runners]
        self._next = itertools.cycle(range(len(self.runners)))
        self._pick = threading.Lock()
        self.stopping = threading.Event()  # no new jobs
        self.abort = threading.Event()  # running jobs end now
        self.results = Results()
        self._results_lock = threading.Lock()
        self._stops = 0

    def verify(self) -> None:
        """`POST runners/verify` for each runner; a refused one is left out (GitLab's runner
        does the same on start)."""
        for state in self.runners:
            entry = state.entry
            try:
                found = state.client.verify(entry.token, self.config.system_id, info(entry.executor))
            except ProtocolError as failed:
                self.display.message(f"runner {entry.short_token} on {entry.url}: cannot verify: {failed}")
                continue
            if found is None:
                state.disabled = True
                self.display.message(f"runner {entry.short_token} on {entry.url}: token refused, not polling")
            else:
                self.display.message(f"runner {entry.short_token} on {entry.url}: verified")

    def _choose(self) -> RunnerState | None:
        with self._pick:
            for _ in range(len(self.runners)):
                state = self.runners[next(self._next)]
                if not state.disabled:
                    return state
        return None

    def _slot(self, slot: int) -> None:
        while not self.stopping.is_set():
            state = self._choose()
            if state is None:
                self.display.message("no runner can take jobs: stopping")
                self.stopping.set()
                return
            entry = state.entry
            answer = state.client.request_job(
                entry.token, self.config.system_id, info(entry.executor), state.last_update
            )
            if answer.last_update:
                state.last_update = answer.last_update
            if answer.job is not None:
                if self.once:
                    self.stopping.set()
                self._run_job(slot, state, answer.job)
                continue
            if answer.forbidden:
                state.disabled = True
                self.display.message(
                    f"runner {entry.short_token} on {entry.url}: refused ({answer.status}), not polling"
                )
                continue
            self.stopping.wait(self.poll_interval)

    def _run_job(self, slot: int, state: RunnerState, job: dict[str, Any]) -> None:
        self.display.job_started(slot, job)
        run = JobRun(
            state.client,
            state.entry,
            self.config,
            job,
            slot=slot,
            abort=self.abort,
            settings=self.settings,
            on_line=lambda line: self.display.job_output(slot, line),
        )
        outcome = run.run()
        with self._results_lock:
            self.results.outcomes.append((run.id, outcome))
        self.display.job_finished(slot, job, outcome.state, outcome.failure_reason)

    def run(self) -> Results:
        """Verify, poll until stopped, wait for the running jobs."""
        self.verify()
        threads = [
            threading.Thread(target=self._slot, args=(slot,), name=f"slot-{slot}", daemon=True)
            for slot in range(self.concurrent)
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)
        finally:
            for client in self.clients.values():
                client.close()
        return self.results

    def stop(self) -> None:
        """First call: take no new jobs; second: end the running ones now."""
        self._stops += 1
        if self._stops > 1:
            self.abort.set()
        self.stopping.set()

    def install_signals(self) -> Callable[[], None]:
        """SIGINT/SIGTERM stop gracefully, a second one aborts the running jobs; the
        function returned puts the previous handlers back."""

        def on_signal(_signum: int, _frame: FrameType | None) -> None:
            if self._stops:
                self.display.message("stopping now: running jobs are aborted")
            else:
                self.display.message("stopping after the running jobs (signal again to abort them)")
            self.stop()

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore
