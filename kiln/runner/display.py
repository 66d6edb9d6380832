"""What a person watching `kiln runner run` sees: a live table of the running jobs on a
terminal, plain timestamped lines otherwise (logs, systemd)."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TextIO


@dataclass
class Slot:
    """A job running in one concurrency slot."""

    job_id: int
    project: str
    name: str
    stage: str
    started: float
    last_line: str = ""


class Display(Protocol):
    def message(self, text: str) -> None: ...

    def job_started(self, slot: int, job: dict[str, Any]) -> None: ...

    def job_output(self, slot: int, line: str) -> None: ...

    def job_finished(self, slot: int, job: dict[str, Any], state: str, reason: str | None) -> None: ...

    def close(self) -> None: ...


def _describe(job: dict[str, Any]) -> tuple[str, str, str]:
    job_info = job.get("job_info") or {}
    return (
        str(job_info.get("project_full_path") or job_info.get("project_name") or ""),
        str(job_info.get("name") or ""),
        str(job_info.get("stage") or ""),
    )


class PlainDisplay:
    """One line per event."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self._lock = threading.Lock()

    def _print(self, text: str) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            print(f"{stamp} {text}", file=self.out, flush=True)

    def message(self, text: str) -> None:
        self._print(text)

    def job_started(self, slot: int, job: dict[str, Any]) -> None:
        project, name, stage = _describe(job)
        self._print(f"job {job.get('id')} started: {project} {stage}/{name} (slot {slot})")

    def job_output(self, slot: int, line: str) -> None:
        return None

    def job_finished(self, slot: int, job: dict[str, Any], state: str, reason: str | None) -> None:
        suffix = f" ({reason})" if reason else ""
        self._print(f"job {job.get('id')} finished: {state}{suffix}")

    def close(self) -> None:
        return None


class LiveDisplay(PlainDisplay):
    """A table of slots redrawn a few times a second, with finished jobs printed above it."""

    def __init__(self, concurrent: int) -> None:
        super().__init__()
        from rich.console import Console
        from rich.live import Live

        self.console = Console(stderr=True)
        self.concurrent = concurrent
        self.slots: dict[int, Slot] = {}
        self.done = 0
        self.live = Live(
            self._table(), console=self.console, refresh_per_second=4, get_renderable=self._table
        )
        self.live.start()

    def _table(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        table = Table(
            title=f"kiln runner: {len(self.slots)}/{self.concurrent} busy, {self.done} done", expand=True
        )
        for column in ("slot", "job", "project", "stage / name", "time", "last output"):
            table.add_column(column, overflow="ellipsis", no_wrap=True)
        for index in range(self.concurrent):
            slot = self.slots.get(index)
            if slot is None:
                table.add_row(str(index), "-", "", Text("waiting for a job", style="dim"), "", "")
                continue
            elapsed = int(time.monotonic() - slot.started)
            table.add_row(
                str(index),
                str(slot.job_id),
                slot.project,
                f"{slot.stage} / {slot.name}",
                f"{elapsed // 60}:{elapsed % 60:02d}",
                Text.from_ansi(slot.last_line[-200:]),
            )
        return table

    def _print(self, text: str) -> None:
        from rich.markup import escape

        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        self.console.print(f"[dim]{stamp}[/dim] {escape(text)}", highlight=False)

    def _status(self, text: str, color: str) -> None:
        from rich.markup import escape

        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        self.console.print(f"[dim]{stamp}[/dim] [{color}]{escape(text)}[/{color}]", highlight=False)

    def job_started(self, slot: int, job: dict[str, Any]) -> None:
        project, name, stage = _describe(job)
        self.slots[slot] = Slot(int(job.get("id") or 0), project, name, stage, time.monotonic())

    def job_output(self, slot: int, line: str) -> None:
        found = self.slots.get(slot)
        if found is not None:
            found.last_line = line

    def job_finished(self, slot: int, job: dict[str, Any], state: str, reason: str | None) -> None:
        self.slots.pop(slot, None)
        self.done += 1
        project, name, stage = _describe(job)
        suffix = f" ({reason})" if reason else ""
        self._status(
            f"job {job.get('id')} {project} {stage}/{name}: {state}{suffix}",
            "green" if state == "success" else "red",
        )

    def close(self) -> None:
        self.live.stop()


def for_terminal(concurrent: int) -> Display:
    """The live table when stderr is a terminal, plain lines otherwise."""
    if sys.stderr.isatty():
        try:
            return LiveDisplay(concurrent)
        except ImportError:
            pass
    return PlainDisplay()
