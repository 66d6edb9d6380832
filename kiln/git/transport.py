"""Git's smart HTTP transport: `git upload-pack` / `git receive-pack --stateless-rpc` as child
processes, the pkt-line framing around them, and the receive-pack commands read ahead of the
pack so a push can be judged before git sees it.

Nothing here knows about users or projects; kiln.services.git_http decides who may do what."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sys
import tempfile
import zlib
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

import pygit2

from kiln.git.names import is_object_id
from kiln.git.pre_receive import Rules
from kiln.metrics import observe_git

log = logging.getLogger("kiln.git")

UPLOAD_PACK = "git-upload-pack"
RECEIVE_PACK = "git-receive-pack"
SERVICES = (UPLOAD_PACK, RECEIVE_PACK)

FLUSH = b"0000"
# Largest pkt-line git writes (LARGE_PACKET_MAX); a side-band packet keeps 5 bytes of it.
LARGE_PACKET_MAX = 65520
CHUNK = 64 * 1024
# The commands of one push (old new ref per line) are read into memory ahead of the pack.
MAX_COMMANDS_BYTES = 16 * 1024 * 1024
HOOK_DECLINED = "pre-receive hook declined"
# The capability under which a push's options (`git push -o`) follow its commands.
PUSH_OPTIONS = "push-options"
# GIT_PROTOCOL values git itself sends ("version=2", "version=2:object-format=sha256").
_PROTOCOL = re.compile(r"^[A-Za-z0-9=:._-]{1,200}$")

# git's object checks on every pack received (receive.fsckObjects, the `.gitmodules` checks
# among them). receive-pack counts fsck's warnings as errors but lets its infos through with
# a word, and `git fsck --strict` reports both: every one is an error here, so whatever a push
# leaves in a repository passes `git fsck --strict` without a word.
STRICT_FSCK = (
    "badFilemode",
    "badTagName",
    "emptyName",
    "fullPathname",
    "gitattributesSymlink",
    "gitignoreSymlink",
    "gitmodulesParse",
    "hasDot",
    "hasDotdot",
    "hasDotgit",
    "mailmapSymlink",
    "missingTaggerEntry",
    "nulInCommit",
    "nullSha1",
    "zeroPaddedFilemode",
)
FSCK_CONFIG = ("receive.fsckObjects=true", *(f"receive.fsck.{msg_id}=error" for msg_id in STRICT_FSCK))

# kiln's checks of a push (kiln.git.pre_receive) run in receive-pack's quarantine, after the
# pack arrived and git checked its objects, before any ref moves; the interpreter and the
# import path are the ones kiln itself runs with.
PRE_RECEIVE = """#!/bin/sh
exec "$KILN_PYTHON" -P -m kiln.git.pre_receive
"""
_KILN_ROOT = str(Path(__file__).resolve().parents[2])


def content_type(service: str, kind: str) -> str:
    """`kind`: advertisement, request or result (git-http-backend's names)."""
    return f"application/x-{service}-{kind}"


def pkt_line(payload: bytes) -> bytes:
    return f"{len(payload) + 4:04x}".encode() + payload


def sideband(band: int, data: bytes, limit: int = LARGE_PACKET_MAX) -> bytes:
    """`data` on side-band channel `band` (1 pack/report, 2 progress), split into packets."""
    size = limit - 5
    return b"".join(pkt_line(bytes([band]) + data[i : i + size]) for i in range(0, len(data), size))


def service_header(service: str) -> bytes:
    """What git-http-backend writes before a protocol v0/v1 advertisement."""
    return pkt_line(f"# service={service}\n".encode()) + FLUSH


def protocol_env(header: str | None) -> dict[str, str]:
    """GIT_PROTOCOL from the client's Git-Protocol header (protocol v2), if it looks like one."""
    if header and _PROTOCOL.match(header):
        return {"GIT_PROTOCOL": header}
    return {}


def is_zero(oid: str) -> bool:
    return set(oid) == {"0"}


@dataclass(slots=True, frozen=True)
class RefCommand:
    old: str
    new: str
    ref: str

    @property
    def creation(self) -> bool:
        return is_zero(self.old)

    @property
    def deletion(self) -> bool:
        return is_zero(self.new)


@dataclass(slots=True)
class PushRequest:
    commands: list[RefCommand]
    capabilities: frozenset[str]
    options: list[str]  # `git push -o …`, in the order given


class MalformedRequest(Exception):
    """A request body git would not understand either (pkt-lines, gzip)."""


class _CommandReader:
    """The pkt-lines of a receive-pack request's command list, and of the push options that
    follow it when the client asked for `push-options`, parsed as the bytes arrive."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.pos = 0
        self.commands: list[RefCommand] = []
        self.capabilities: frozenset[str] = frozenset()
        self.options: list[str] = []
        self.reading_options = False

    def add(self, chunk: bytes) -> bool:
        """True once the flush that ends the commands (or the push options) has arrived."""
        self.data += chunk
        data = self.data
        while len(data) >= self.pos + 4:
            try:
                length = int(data[self.pos : self.pos + 4], 16)
            except ValueError:
                raise MalformedRequest("invalid pkt-line length") from None
            if length == 0:
                self.pos += 4
                if self.reading_options or PUSH_OPTIONS not in self.capabilities or not self.commands:
                    return True
                self.reading_options = True
                continue
            if length < 4:
                raise MalformedRequest("invalid pkt-line length")
            if len(data) < self.pos + length:
                return False
            line = bytes(data[self.pos + 4 : self.pos + length])
            if self.reading_options:
                self.options.append(line.removesuffix(b"\n").decode("utf-8", "replace"))
            else:
                self._line(line)
            self.pos += length
        return False

    def _line(self, line: bytes) -> None:
        line = line.removesuffix(b"\n")
        if line.startswith(b"shallow "):
            return
        if b"\x00" in line:
            line, caps = line.split(b"\x00", 1)
            if not self.commands:
                self.capabilities = frozenset(caps.decode("utf-8", "replace").split())
        parts = line.decode("utf-8", "surrogateescape").split(" ", 2)
        if len(parts) != 3 or not (is_object_id(parts[0]) and is_object_id(parts[1])):
            raise MalformedRequest("invalid command")
        self.commands.append(RefCommand(parts[0], parts[1], parts[2]))


async def read_push(body: AsyncIterator[bytes]) -> tuple[bytes, PushRequest]:
    """The ref commands at the start of a receive-pack request, and the bytes read so far
    (the commands and maybe the start of the pack), to be replayed into git."""
    reader = _CommandReader()
    async for chunk in body:
        if reader.add(chunk):
            return bytes(reader.data), PushRequest(reader.commands, reader.capabilities, reader.options)
        if len(reader.data) > MAX_COMMANDS_BYTES:
            raise MalformedRequest("too many commands")
    raise MalformedRequest("incomplete receive-pack request")


def refusal(push: PushRequest, message: str) -> bytes:
    """A receive-pack answer that refuses every command, as git's own answer when the
    pre-receive hook declines: the message on the progress channel, each ref `ng`."""
    caps = push.capabilities
    sideband_limit = LARGE_PACKET_MAX if "side-band-64k" in caps else 1000
    use_sideband = "side-band-64k" in caps or "side-band" in caps
    reason = HOOK_DECLINED if use_sideband else message
    report = b""
    if "report-status" in caps or "report-status-v2" in caps:
        report = pkt_line(b"unpack ok\n")
        for command in push.commands:
            report += pkt_line(f"ng {command.ref} {reason}\n".encode("utf-8", "surrogateescape"))
        report += FLUSH
    if not use_sideband:
        return report
    body = sideband(2, f"{message}\n".encode(), sideband_limit)
    if report:
        body += sideband(1, report, sideband_limit)
    return body + FLUSH


def read_refs(repo_path: Path, names: list[str]) -> dict[str, str | None]:
    """Where each of these refs points now (not peeled; None when absent)."""
    repo = pygit2.Repository(str(repo_path))
    found: dict[str, str | None] = {}
    for name in names:
        try:
            ref = repo.references.get(name)
        except (ValueError, pygit2.InvalidSpecError):
            ref = None
        found[name] = None if ref is None else str(ref.resolve().target)
    return found


def branch_names(repo_path: Path) -> list[str]:
    repo = pygit2.Repository(str(repo_path))
    return [name.removeprefix("refs/heads/") for name in repo.references if name.startswith("refs/heads/")]


def hooks_dir(root: Path) -> Path:
    """A directory holding kiln's pre-receive hook, written once per content."""
    path = root / "git-hooks"
    hook = path / "pre-receive"
    if not hook.is_file() or hook.read_text() != PRE_RECEIVE:
        path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".pre-receive.", dir=path)
        with os.fdopen(fd, "w") as out:
            out.write(PRE_RECEIVE)
        os.chmod(tmp, 0o755)
        os.replace(tmp, hook)
    return path


@dataclass(slots=True, frozen=True)
class ReceiveHook:
    """kiln's pre-receive hook for one push: the directory it is in, and what it refuses."""

    path: Path
    rules: Rules

    def environment(self) -> dict[str, str]:
        search = os.pathsep.join(p for p in (_KILN_ROOT, os.environ.get("PYTHONPATH")) if p)
        return {**self.rules.environment(), "KILN_PYTHON": sys.executable, "PYTHONPATH": search}


async def inflate(chunks: AsyncIterator[bytes], encoding: str | None) -> AsyncIterator[bytes]:
    """The request body as git wrote it: gzip bodies (git compresses large requests) inflated."""
    if not encoding or encoding.lower() not in ("gzip", "x-gzip"):
        async for chunk in chunks:
            yield chunk
        return
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        async for chunk in chunks:
            out = decompressor.decompress(chunk)
            if out:
                yield out
        rest = decompressor.flush()
    except zlib.error:
        raise MalformedRequest("invalid gzip body") from None
    if rest:
        yield rest


async def advertisement(git: GitProcess) -> AsyncIterator[bytes]:
    """info/refs as git-http-backend answers it: protocol v2 starts with its capability
    list, v0 and v1 get the `# service=` header first."""
    v2 = pkt_line(b"version 2\n")
    start = b""
    try:
        output = git.output()
        async for chunk in output:
            start += chunk
            if len(start) >= len(v2):
                break
        yield start if start.startswith(v2) else service_header(git.service) + start
        async for chunk in output:
            yield chunk
        await git.wait()
    finally:
        git.stop()


@dataclass
class GitProcess:
    """One `git upload-pack|receive-pack --stateless-rpc` child. Its output during `feed` is
    kept (receive-pack reports progress while the pack still arrives), so stdin and stdout
    never wait on each other."""

    service: str
    process: asyncio.subprocess.Process
    early: bytearray = field(default_factory=bytearray)
    errors: deque[bytes] = field(default_factory=lambda: deque(maxlen=32))
    _stderr_task: asyncio.Task[None] | None = None
    started: float = field(default_factory=perf_counter)

    @classmethod
    async def start(
        cls,
        service: str,
        repo_path: Path,
        *,
        advertise: bool = False,
        protocol: str | None = None,
        hook: ReceiveHook | None = None,
        max_input: int = 0,
    ) -> GitProcess:
        """`max_input`: the largest pack receive-pack accepts (0: any). Receive-pack checks
        every object it receives as `git fsck --strict` would, then runs `hook`, if any."""
        config = ["-c", "uploadpack.allowFilter=true", "-c", "receive.advertisePushOptions=true"]
        if service == RECEIVE_PACK:
            config += [arg for setting in FSCK_CONFIG for arg in ("-c", setting)]
        if max_input > 0:
            config += ["-c", f"receive.maxInputSize={max_input}"]
        env = {**os.environ, **protocol_env(protocol)}
        if hook is not None:
            config += ["-c", f"core.hooksPath={hook.path}"]
            env.update(hook.environment())
        args = ["git", *config, service.removeprefix("git-"), "--stateless-rpc"]
        if advertise:
            args.append("--advertise-refs")
        args.append(str(repo_path))
        process = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.DEVNULL if advertise else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        git = cls(service, process)
        git._stderr_task = asyncio.create_task(git._drain_stderr())
        return git

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.errors.append(line)

    async def _collect(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(CHUNK):
            self.early += chunk

    async def feed(self, chunks: AsyncIterator[bytes], first: bytes = b"") -> None:
        """Write the request into git's stdin and close it; a child that stopped reading
        (it failed) gets no more."""
        stdin = self.process.stdin
        assert stdin is not None
        collector = asyncio.create_task(self._collect())
        try:
            if not first or await self._write(first):
                async for chunk in chunks:
                    if not await self._write(chunk):
                        break
            with contextlib.suppress(OSError):
                stdin.close()
                await stdin.wait_closed()
        finally:
            collector.cancel()
            try:
                await collector
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise

    async def _write(self, chunk: bytes) -> bool:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(chunk)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    async def output(self) -> AsyncIterator[bytes]:
        """What git wrote: the part kept during `feed`, then the rest as it comes."""
        stdout = self.process.stdout
        assert stdout is not None
        if self.early:
            chunk, self.early = bytes(self.early), bytearray()
            yield chunk
        while chunk := await stdout.read(CHUNK):
            yield chunk

    async def wait(self) -> int:
        code = await self.process.wait()
        observe_git(self.service.removeprefix("git-"), perf_counter() - self.started)
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task
        if code != 0:
            log.warning(
                "%s exited with %s: %s", self.service, code, b"".join(self.errors).decode(errors="replace")
            )
        return code

    def stop(self) -> None:
        """Ends a child whose client went away; SIGTERM lets git clean its quarantine."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()
