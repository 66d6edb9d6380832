"""The server's secret key: what kiln derives the secrets it shows again from (a project's
runner registration token), so that the database alone never holds them.

KILN_SECRET_KEY_BASE sets it. Otherwise it is the file `secret_key_base` in the data dir,
made on first use, readable by kiln's user alone; every process and node sharing the data
dir shares it. Losing it changes every derived secret, so back it up with the database."""

from __future__ import annotations

import os
import secrets
import tempfile
from contextlib import suppress
from functools import cache
from pathlib import Path

from kiln.config import Settings

ENV = "KILN_SECRET_KEY_BASE"
FILE_NAME = "secret_key_base"
# A key an attacker holding the database and one derived token could search for must not be
# short; the file's is 128 hex digits.
MIN_LENGTH = 32


class ServerSecretError(RuntimeError):
    """The configured key is too weak to derive secrets from."""


def key(settings: Settings) -> bytes:
    """The key, from the environment or the data dir; ServerSecretError if it is too short."""
    configured = os.environ.get(ENV)
    if configured is not None:
        return _checked(configured, f"${ENV}")
    return _file_key(settings.data_dir.resolve() / FILE_NAME)


@cache
def _file_key(path: Path) -> bytes:
    """Read once per process: the file never changes while kiln runs."""
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        text = _create(path)
    return _checked(text.strip(), str(path))


def _create(path: Path) -> str:
    """Written to a file of its own, then linked into place: of processes starting at once,
    one key wins and every process reads that one, never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{FILE_NAME}.")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(64) + "\n")
            out.flush()
            os.fsync(out.fileno())
        with suppress(FileExistsError):
            os.link(draft, path)
    finally:
        os.unlink(draft)
    return path.read_text(encoding="ascii")


def _checked(text: str, source: str) -> bytes:
    if len(text) < MIN_LENGTH:
        raise ServerSecretError(f"the server secret in {source} is shorter than {MIN_LENGTH} characters")
    return text.encode("utf-8")
