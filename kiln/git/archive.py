"""Repository archives streamed from `git archive`, compressed without timestamps so the
same commit always gives the same bytes (clients and caches compare checksums)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from time import perf_counter

from kiln.git import timed
from kiln.git.errors import ArchiveFailed

CHUNK = 64 * 1024

# Requested format (path suffix or `format` parameter) → file extension; anything else is tar.gz.
FORMATS = {
    "tar.gz": "tar.gz",
    "tgz": "tar.gz",
    "gz": "tar.gz",
    "tar.bz2": "tar.bz2",
    "tbz": "tar.bz2",
    "tbz2": "tar.bz2",
    "tb2": "tar.bz2",
    "bz2": "tar.bz2",
    "tar": "tar",
    "zip": "zip",
}
_COMPRESSORS = {"tar.gz": ("gzip", "-n", "-c"), "tar.bz2": ("bzip2", "-c")}
_REF_PREFIX = re.compile(r"^refs/(?:heads|tags)/")


def extension(fmt: str | None) -> str:
    return FORMATS.get(fmt or "", "tar.gz")


def media_type(ext: str) -> str:
    return "application/zip" if ext == "zip" else "application/octet-stream"


def archive_prefix(project_path: str, ref: str, sha: str, path: str | None) -> str:
    """The file name without extension, and the top-level folder of every member:
    `<project>-<ref>-<sha>[-<path>]` with slashes turned into dashes."""
    parts = [project_path, _REF_PREFIX.sub("", ref).replace("/", "-"), sha]
    if path:
        parts.append(path.replace("/", "-"))
    return "-".join(parts)


async def stream(
    repo_path: Path, commit: str, prefix: str, ext: str, path: str | None = None
) -> AsyncIterator[bytes]:
    """`git archive` of `commit` (limited to `path`), piped through gzip -n or bzip2. The
    processes start on the first read and are killed if the reader stops early; reads run in
    a thread (asyncio's pipes would not notice the end of a process killed mid-stream). An
    archive is only whole if every process exited cleanly: otherwise ArchiveFailed is raised
    after the last chunk, so the response ends broken instead of looking complete."""
    args = ["git", "archive", f"--format={'zip' if ext == 'zip' else 'tar'}", f"--prefix={prefix}/", commit]
    if path:
        args += ["--", path]
    procs: list[subprocess.Popen[bytes]] = []
    started = perf_counter()
    with tempfile.TemporaryFile() as errors:
        try:
            git = subprocess.Popen(args, cwd=repo_path, stdout=subprocess.PIPE, stderr=errors)
            procs.append(git)
            compressor = _COMPRESSORS.get(ext)
            if compressor is not None:
                squeeze = subprocess.Popen(
                    compressor, stdin=git.stdout, stdout=subprocess.PIPE, stderr=errors
                )
                procs.append(squeeze)
                assert git.stdout is not None
                git.stdout.close()  # the compressor holds the read end now
            out = procs[-1].stdout
            assert out is not None
            fd = out.fileno()
            while chunk := await asyncio.to_thread(os.read, fd, CHUNK):
                yield chunk
            statuses = [await asyncio.to_thread(proc.wait) for proc in procs]
            if any(statuses):
                errors.seek(0)
                raise ArchiveFailed(
                    errors.read(4096).decode("utf-8", "replace").strip() or f"exit {statuses}"
                )
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
            timed.observe(args, perf_counter() - started)


async def primed(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The same chunks, the first one read now: an archive that fails before its first byte
    raises here, while an answer can still say so, instead of becoming an empty 200."""
    first = await anext(chunks, b"")

    async def rest() -> AsyncIterator[bytes]:
        if first:
            yield first
        async for chunk in chunks:
            yield chunk

    return rest()
