"""`python -m bench.cost`: the costliest requests a caller can craft, each sent alone to a real
`kiln serve` (SQLite, one process): how long it stalls the requests that go on meanwhile, and
how much it grows the server's memory.

The repository is crafted as a push would bring it, written with pygit2 straight into the
project's storage: a 100 MiB blob of one line (`data/big.py`), a 10 MiB blob of a million
short lines (`data/lines.py`, just under the large-blob size, so blame reads it), and a file
2,000 directories deep; a second project's holds a tree bomb (2^40 paths in 41 trees). Each crafted request is made with `curl` (its answer read and thrown
away as fast as it comes), while this process sends `GET /api/v4/version` back to back on a
keep-alive connection and times each. Reported per request: its status and time, the longest
and the 99th-percentile probe while it ran, and the growth of the server's resident memory
(its peak, reset before the request through /proc/<pid>/clear_refs, over its size before).

Aims: no probe waits more than 100 ms, no request grows the server by more than 256 MiB."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import httpx
import pygit2

from bench import dataset
from bench.processes import (
    ROOT_TOKEN,
    Managed,
    cpu_count,
    free_port,
    kiln_server,
    pin_to,
    public_project,
    server_env,
)
from kiln.git.layout import repository_path

STALL_AIM_MS = 100.0
GROWTH_AIM_MIB = 256.0
BIG_BYTES = 100 * 1024 * 1024
LINES_BYTES = 10 * 1024 * 1024 - 1
DEPTH = 2000
# A tree bomb: `a` and `b` name the same tree one level down, this many levels over one blob.
BOMB_LEVELS = 40
ACTIONS = 10_000
# Bodies under the 32 MiB JSON limit: one file's text, and ten million tiny arrays (refused by
# their count before they are built).
JSON_FILE_BYTES = 30 * 1024 * 1024
JSON_ELEMENTS_BYTES = 30 * 1024 * 1024
PROBE = "/api/v4/version"
TIMEOUT_S = 300.0
BLOB = pygit2.enums.FileMode.BLOB
TREE = pygit2.enums.FileMode.TREE


@dataclass
class Crafted:
    key: str
    label: str
    path: str
    method: str = "GET"
    body: Path | None = None


@dataclass
class Outcome:
    key: str
    label: str
    status: int
    seconds: float
    answer_bytes: int
    probes: int
    probe_max_ms: float
    probe_p99_ms: float
    growth_mib: float

    @property
    def ok(self) -> bool:
        return self.probe_max_ms <= STALL_AIM_MS and self.growth_mib <= GROWTH_AIM_MIB


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__)
    parser.add_argument("--no-pin", action="store_true", help="do not pin the server to a CPU")
    parser.add_argument("--keep", action="store_true", help="keep the data directory and server log")
    parser.add_argument("--results-dir", type=Path, default=Path(__file__).resolve().parent / "results")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from bench.cli import git_revision

    args = parse_args(argv)
    started = datetime.now(UTC)
    outcomes = run(pin=not args.no_pin, keep=args.keep)
    print_report(outcomes)
    document = {
        "started_at": started.isoformat(timespec="seconds"),
        "git": git_revision(),
        "aims": {"stall_ms": STALL_AIM_MS, "growth_mib": GROWTH_AIM_MIB},
        "requests": [asdict(o) for o in outcomes],
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"cost-{started.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nresults: {path}")
    return 0


def run(*, pin: bool = True, keep: bool = False) -> list[Outcome]:
    """Serve kiln on a fresh data dir, craft its repository, send each crafted request."""
    from bench.cli import bin_path, step

    server_cpu = 0 if pin and cpu_count() >= 2 else None
    with ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="kiln-bench-cost-"))
        if not keep:
            stack.callback(shutil.rmtree, work, ignore_errors=True)
        data_dir = work / "data"
        data_dir.mkdir()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = server_env(data_dir, port)
        step("[cost] kiln migrate")
        dataset.migrate(bin_path("kiln"), env, work / "migrate.log")
        kiln = kiln_server(bin_path("kiln"), port, env, work / "kiln.log", server_cpu)
        stack.callback(kiln.stop)
        token = {"Private-Token": ROOT_TOKEN}
        kiln.wait_ready(f"{base}/api/v4/user", token)
        project = public_project(base, "bench-cost")
        step("[cost] crafting the repository: 100 MiB one-line blob, 10 MiB of short lines, 2,000 deep")
        shas = craft(repository_path(data_dir / "repositories", project["id"]))
        bomb = public_project(base, "bench-bomb")
        step(f"[cost] crafting a tree bomb: 2^{BOMB_LEVELS} paths in {BOMB_LEVELS + 1} trees")
        craft_bomb(repository_path(data_dir / "repositories", bomb["id"]))
        actions = work / "actions.json"
        actions.write_bytes(
            json.dumps(
                {
                    "branch": "main",
                    "commit_message": f"{ACTIONS:,} actions",
                    "actions": [
                        {"action": "create", "file_path": f"many/d{n % 100}/f{n}.txt", "content": f"{n}\n"}
                        for n in range(ACTIONS)
                    ],
                }
            ).encode()
        )
        bodies = {
            "actions": actions,
            "json_file": work / "json-file.json",
            "json_elements": work / "json-elements.json",
        }
        bodies["json_file"].write_bytes(
            b'{"branch": "main", "commit_message": "30 MiB of text", "content": "'
            + b"kiln, 30 MiB of text in JSON\\n" * (JSON_FILE_BYTES // 31)
            + b'"}'
        )
        bodies["json_elements"].write_bytes(
            b'{"name": "elements", "a": [' + b"[]," * (JSON_ELEMENTS_BYTES // 3) + b"[]]}"
        )
        outcomes = []
        with httpx.Client(base_url=base, timeout=TIMEOUT_S) as probe:
            for crafted in requests(project["id"], shas, bodies, bomb["id"]):
                step(f"[cost] {crafted.label}")
                outcomes.append(measure(crafted, base, kiln, probe, server_cpu))
        if kiln.proc.poll() is not None:
            raise RuntimeError(f"kiln died during the run:\n{kiln.tail()}")
        return outcomes


def craft(path: Path) -> dict[str, str]:
    """Three commits on main, each as a push could bring it; their ids by what they add."""
    repo = pygit2.Repository(str(path))
    shas = {"base": str(repo.references["refs/heads/main"].target)}
    big = repo.create_blob(b"a" * BIG_BYTES)
    shas["big_blob"] = str(big)
    line = b"x" * 9 + b"\n"
    lines = repo.create_blob(line * (LINES_BYTES // len(line)) + b"x" * (LINES_BYTES % len(line)))
    shas["lines"] = _commit(repo, "data/lines.py", lines, BLOB, "a million short lines")
    shas["big"] = _commit(repo, "data/big.py", big, BLOB, "one line of 100 MiB")
    leaf = repo.TreeBuilder()
    leaf.insert("f.py", repo.create_blob(b"print('deep')\n"), BLOB)
    tree = leaf.write()
    for _ in range(DEPTH - 1):
        level = repo.TreeBuilder()
        level.insert("d", tree, TREE)
        tree = level.write()
    shas["deep"] = _commit(repo, "d", tree, TREE, f"{DEPTH:,} directories deep")
    return shas


def craft_bomb(path: Path) -> str:
    """A commit on main whose tree holds `a` and `b`, each the same tree one level down,
    BOMB_LEVELS levels over a single blob: legal git, a few KiB, 2^BOMB_LEVELS paths."""
    repo = pygit2.Repository(str(path))
    builder = repo.TreeBuilder()
    builder.insert("x.py", repo.create_blob(b"print(1)\n"), BLOB)
    tree = builder.write()
    for _ in range(BOMB_LEVELS):
        builder = repo.TreeBuilder()
        builder.insert("a", tree, TREE)
        builder.insert("b", tree, TREE)
        tree = builder.write()
    tip = repo.references["refs/heads/main"]
    sig = pygit2.Signature("Pusher", "pusher@example.com")
    commit = repo.create_commit(None, sig, sig, "a tree bomb", tree, [tip.target])
    tip.set_target(commit)
    return str(commit)


def _commit(repo: pygit2.Repository, path: str, oid: pygit2.Oid, mode: int, message: str) -> str:
    """A commit on main adding `oid` at `path` (a top-level tree, or a blob at any depth)."""
    tip = repo.references["refs/heads/main"]
    parent = repo[tip.target].peel(pygit2.Commit)
    if mode == TREE:
        root = repo.TreeBuilder(parent.tree)
        root.insert(path, oid, TREE)
        tree = root.write()
    else:
        index = pygit2.Index()
        index.read_tree(parent.tree)
        index.add(pygit2.IndexEntry(path, oid, BLOB))
        tree = index.write_tree(repo)
    sig = pygit2.Signature("Pusher", "pusher@example.com")
    commit = repo.create_commit(None, sig, sig, message, tree, [parent.id])
    tip.set_target(commit)
    return str(commit)


def requests(project_id: int, shas: dict[str, str], bodies: dict[str, Path], bomb_id: int) -> list[Crafted]:
    repo = f"/api/v4/projects/{project_id}/repository"
    big = quote("data/big.py", safe="")
    lines = quote("data/lines.py", safe="")
    deep = quote("/".join(["d"] * DEPTH) + "/f.py", safe="")
    return [
        Crafted("file_json", "100 MiB blob as file JSON", f"{repo}/files/{big}?ref=main"),
        Crafted("file_raw", "100 MiB blob raw", f"{repo}/files/{big}/raw?ref=main"),
        Crafted("blob_json", "100 MiB blob as blob JSON", f"{repo}/blobs/{shas['big_blob']}"),
        Crafted("blame_big", "blame of the 100 MiB one-line blob", f"{repo}/files/{big}/blame?ref=main"),
        Crafted("blame_lines", "blame of 10 MiB in a million lines", f"{repo}/files/{lines}/blame?ref=main"),
        Crafted("diff", "commit diff adding the 100 MiB blob", f"{repo}/commits/{shas['big']}/diff"),
        Crafted("commit", "that commit with its stats", f"{repo}/commits/{shas['big']}"),
        Crafted(
            "compare", "compare across both blobs", f"{repo}/compare?from={shas['base']}&to={shas['big']}"
        ),
        Crafted("languages", "languages of the whole tree", f"/api/v4/projects/{project_id}/languages"),
        Crafted(
            "tree_deep", "tree 2,000 deep, recursive", f"{repo}/tree?ref=main&recursive=true&pagination=none"
        ),
        Crafted("file_deep", "file 2,000 directories deep", f"{repo}/files/{deep}?ref=main"),
        Crafted("actions", f"commit of {ACTIONS:,} actions", f"{repo}/commits", "POST", bodies["actions"]),
        Crafted(
            "json_file",
            "30 MiB of text as a JSON file write",
            f"{repo}/files/big.txt",
            "POST",
            bodies["json_file"],
        ),
        Crafted(
            "json_elements",
            "30 MiB JSON body of [],[],… (refused)",
            "/api/v4/projects",
            "POST",
            bodies["json_elements"],
        ),
        Crafted("bomb_languages", "languages of a tree bomb", f"/api/v4/projects/{bomb_id}/languages"),
        Crafted(
            "bomb_tree",
            "tree bomb, recursive, page 2 of 100",
            f"/api/v4/projects/{bomb_id}/repository/tree?ref=main&recursive=true&per_page=100&page=2",
        ),
    ]


def measure(crafted: Crafted, base: str, kiln: Managed, probe: httpx.Client, cpu: int | None) -> Outcome:
    """The crafted request from curl on the other CPU, probes from here until it ends."""
    kiln.wait_idle(timeout=30)
    probe.get(PROBE).raise_for_status()
    pid = kiln.proc.pid
    before = _rss_kib(pid)
    _reset_peak(pid)
    argv = [
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{size_download}",
        "-X",
        crafted.method,
        "-H",
        f"Private-Token: {ROOT_TOKEN}",
        "--max-time",
        str(int(TIMEOUT_S)),
    ]
    if crafted.body is not None:
        argv += ["-H", "Content-Type: application/json", "--data-binary", f"@{crafted.body}"]
    other = None if cpu is None else 1
    started = time.perf_counter()
    client = subprocess.Popen(
        [*argv, base + crafted.path],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        preexec_fn=pin_to(other),  # noqa: PLW1509 - the harness starts no threads
    )
    waits: list[float] = []
    while client.poll() is None:
        sent = time.perf_counter()
        probe.get(PROBE)
        waits.append((time.perf_counter() - sent) * 1000)
    seconds = time.perf_counter() - started
    out = (client.stdout.read() if client.stdout else b"").decode().split()
    peak = _peak_kib(pid)
    ordered = sorted(waits) or [0.0]
    return Outcome(
        key=crafted.key,
        label=crafted.label,
        status=int(out[0]) if out else 0,
        seconds=round(seconds, 3),
        answer_bytes=int(float(out[1])) if len(out) > 1 else 0,
        probes=len(waits),
        probe_max_ms=round(ordered[-1], 1),
        probe_p99_ms=round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
        growth_mib=round(max(0, peak - before) / 1024, 1),
    )


def _status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return fields


def _rss_kib(pid: int) -> int:
    return int(_status(pid)["VmRSS"].split()[0])


def _peak_kib(pid: int) -> int:
    return int(_status(pid)["VmHWM"].split()[0])


def _reset_peak(pid: int) -> None:
    """The peak resident size starts again from the present one (Linux's clear_refs 5)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def print_report(outcomes: list[Outcome]) -> None:
    print()
    print("worst-case requests (kiln serve, SQLite, one process); probes: GET /api/v4/version back to back")
    header = (
        f"  {'request':<38} {'status':>6} {'seconds':>8} {'answer MiB':>10} {'probes':>6}"
        f" {'max ms':>7} {'p99 ms':>7} {'RSS +MiB':>8}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    for o in outcomes:
        print(
            f"  {o.label:<38} {o.status:>6} {o.seconds:>8.2f} {o.answer_bytes / 1048576:>10.1f} {o.probes:>6}"
            f" {o.probe_max_ms:>7.1f} {o.probe_p99_ms:>7.1f} {o.growth_mib:>8.1f}  {'ok' if o.ok else 'ABOVE AIM'}"
        )
    print(
        f"aims: no probe over {STALL_AIM_MS:g} ms while a request runs; no request grows the server"
        f" by more than {GROWTH_AIM_MIB:g} MiB"
    )


if __name__ == "__main__":
    sys.exit(main())
