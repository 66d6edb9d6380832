"""A job's log: masked as it is written, kept whole (for the checksum and resends), and sent
to the server in increments while the job runs."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterable

from kiln.runner.client import Client, JobState

MASK = b"[MASKED]"
CHUNK_LIMIT = 512 * 1024


class Masker:
    """Replaces secret values by `[MASKED]` in a byte stream. A value split across two writes
    is still caught: the end of a write that could begin a secret is held back until the next
    write (or the final flush) shows whether it does."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted({s.encode() for s in secrets if s}, key=len, reverse=True)
        self._pending = b""

    def feed(self, data: bytes) -> bytes:
        return self._scan(self._pending + data, final=False)

    def flush(self) -> bytes:
        return self._scan(self._pending, final=True)

    def _scan(self, buffer: bytes, *, final: bool) -> bytes:
        if not self._secrets:
            self._pending = b""
            return buffer
        out = bytearray()
        position = 0
        while True:
            found: tuple[int, bytes] | None = None
            for secret in self._secrets:  # longest first: a longer secret wins a tie
                at = buffer.find(secret, position)
                if at >= 0 and (found is None or at < found[0]):
                    found = (at, secret)
            if found is None:
                break
            out += buffer[position : found[0]] + MASK
            position = found[0] + len(found[1])
        rest = buffer[position:]
        held = 0 if final else self._held_length(rest)
        self._pending = rest[len(rest) - held :] if held else b""
        out += rest[: len(rest) - held]
        return bytes(out)

    def _held_length(self, tail: bytes) -> int:
        """The longest end of `tail` that is the start of some secret."""
        longest = len(self._secrets[0]) - 1
        for size in range(min(len(tail), longest), 0, -1):
            piece = tail[-size:]
            if any(secret.startswith(piece) for secret in self._secrets):
                return size
        return 0


class TraceBuffer:
    """The masked log, whole, with its CRC32 (GitLab checks `crc32:<hex>` and the size)."""

    def __init__(self, secrets: Iterable[str], *, limit: int = 4 * 1024 * 1024) -> None:
        self._masker = Masker(secrets)
        self._data = bytearray()
        self._crc = 0
        self._lock = threading.Lock()
        self._limit = limit
        self._full = False
        self._closed = False
        self.on_line: Callable[[str], None] | None = None

    def write(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        with self._lock:
            if self._closed:
                return
            masked = self._masker.feed(raw)
            self._append(masked)
        if self.on_line is not None and masked.strip():
            # The display shows masked text too: a terminal is no safer than the log.
            self.on_line(masked.decode(errors="replace").strip().splitlines()[-1])

    def _append(self, masked: bytes) -> None:
        if self._full or not masked:
            return
        room = self._limit - len(self._data)
        if len(masked) > room:
            masked = (
                masked[:room]
                + (
                    f"\n\x1b[31;1mJob's log exceeded limit of {self._limit} bytes.\n"
                    "Job execution will continue but no more output will be collected.\x1b[0;m\n"
                ).encode()
            )
            self._full = True
        self._data += masked
        self._crc = zlib.crc32(masked, self._crc)

    def close(self) -> None:
        """Flush the masker's held-back bytes; later writes are dropped."""
        with self._lock:
            if not self._closed:
                self._append(self._masker.flush())
                self._closed = True

    def size(self) -> int:
        with self._lock:
            return len(self._data)

    def read(self, start: int, limit: int = CHUNK_LIMIT) -> bytes:
        with self._lock:
            return bytes(self._data[start : start + limit])

    def checksum(self) -> str:
        with self._lock:
            return f"crc32:{self._crc:08x}"

    def text(self) -> str:
        with self._lock:
            return self._data.decode(errors="replace")


class TraceUploader:
    """Sends the buffer's new bytes every interval (3 s, or what the server asks with
    `X-GitLab-Trace-Update-Interval`), resumes where the server says on 416, and touches the
    job with `PUT state=running` when quiet, so a cancel is noticed either way."""

    def __init__(
        self,
        client: Client,
        job_id: int,
        job_token: str,
        buffer: TraceBuffer,
        *,
        interval: float = 3.0,
        keepalive: float = 30.0,
        on_cancel: Callable[[bool], None] | None = None,
    ) -> None:
        self._client = client
        self._job_id = job_id
        self._token = job_token
        self._buffer = buffer
        self.interval = interval
        self._keepalive = keepalive
        self._on_cancel = on_cancel
        self.sent = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"trace-{job_id}", daemon=True)
        self._last_contact = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                break
            if self.sent < self._buffer.size():
                self.send_once()
            elif time.monotonic() - self._last_contact >= self._keepalive:
                self._touch()

    def send_once(self) -> JobState | None:
        """Send what the server does not have yet (one chunk); the answer, if one was sent."""
        chunk = self._buffer.read(self.sent)
        if not chunk:
            return None
        state = self._client.patch_trace(self._job_id, self._token, chunk, self.sent)
        if state.status == 202:
            self.sent += len(chunk)
        elif state.status == 416:
            resume = state.resume_offset()
            self.sent = min(resume, self._buffer.size()) if resume is not None else 0
        self._noticed(state)
        return state

    def _touch(self) -> None:
        state = self._client.update_job(
            self._job_id,
            self._token,
            {
                "state": "running",
                "output": {"checksum": self._buffer.checksum(), "bytesize": self._buffer.size()},
            },
        )
        self._noticed(state)

    def _noticed(self, state: JobState) -> None:
        if state.status:
            self._last_contact = time.monotonic()
        if state.update_interval:
            self.interval = state.update_interval
        if self._on_cancel is not None and (state.canceled or state.canceling):
            self._on_cancel(state.canceling and not state.canceled)

    def finish(self, attempts: int = 20, pause: float = 0.5) -> bool:
        """Stop the loop and send the rest of the log; True when the server has it all."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self._buffer.close()
        failures = 0
        while self.sent < self._buffer.size():
            state = self.send_once()
            if state is None:
                break
            if state.status == 202:
                continue
            if state.status in (403, 404):
                return False
            failures += 1
            if failures >= attempts:
                return False
            if state.status != 416:
                time.sleep(pause)
        return True
