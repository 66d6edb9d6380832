"""A throwaway PostgreSQL server for the test run: initdb + pg_ctl as an unprivileged user."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PG_USER = "postgres"


def _bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for base in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (base / name).exists():
            return str(base / name)
    raise RuntimeError(f"PostgreSQL's {name} is not installed (make test installs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_db_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", PG_USER, "--", *cmd]


class PostgresServer:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="kiln-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()

    def start(self) -> str:
        if os.geteuid() == 0:
            shutil.chown(self.root, PG_USER, PG_USER)
        subprocess.run(
            _as_db_user(
                [_bin("initdb"), "-D", str(self.data), "-U", "kiln", "-A", "trust", "-E", "UTF8", "--no-sync"]
            ),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            _as_db_user(
                [
                    _bin("pg_ctl"),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.root / "log"),
                    "-w",
                    "start",
                    "-o",
                    f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                ]
            ),
            check=True,
            capture_output=True,
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            time.sleep(0.1)
        return f"postgresql+psycopg://kiln@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://kiln@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        subprocess.run(
            _as_db_user([_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(self.root, ignore_errors=True)
