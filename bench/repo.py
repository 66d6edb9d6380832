"""`python -m bench.repo`: repository reads through kiln against the same work done bare.

1. GET /api/v4/projects/:id/repository/files/:path?ref=main for a 10 KB file in a repository
   of 1,000 commits (the file is added by the first and never touched again, so its
   `last_commit_id` is found at the far end of the history), against a bare Litestar route
   that reads the same blob with pygit2 and renders it the same way, minus last_commit_id
   (bench.bare's `/blob`).
2. `git clone` of that repository through kiln's smart HTTP, against `git http-backend`
   behind a minimal CGI server (bench.repo --serve-backend), the floor for any git-over-HTTP
   server.

Same arrangement as `python -m bench`: SQLite data dir, servers pinned to CPU 0 and the load
generator (wrk, else bench.loadgen) to CPU 1, one target at a time; CPU per request from /proc,
including the `git` processes a server runs and reaps."""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from bench import bare as bare_app
from bench import dataset
from bench.cli import RESULTS, bin_path, git_revision, step
from bench.load import Measurement, Target, choose, measure
from bench.processes import (
    ROOT_TOKEN,
    Managed,
    bare_server,
    cpu_count,
    free_port,
    kiln_server,
    public_project,
    server_env,
)
from kiln.git.layout import repository_path, repository_relpath

# ---------------------------------------------------------------------------- git http-backend


class CGIBackend(BaseHTTPRequestHandler):
    """git http-backend as CGI: one process per request, its output passed through."""

    root = ""

    def do_GET(self) -> None:
        self._run(b"")

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while size := int(self.rfile.readline().strip() or b"0", 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = bytearray(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self._run(bytes(body))

    def _run(self, body: bytes) -> None:
        url = urlsplit(self.path)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
        }
        for header in ("Content-Encoding", "Git-Protocol"):
            if header in self.headers:
                env["HTTP_" + header.upper().replace("-", "_")] = self.headers[header]
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


def serve_backend(root: str, port: int) -> None:
    CGIBackend.root = root
    ThreadingHTTPServer(("127.0.0.1", port), CGIBackend).serve_forever()


# ---------------------------------------------------------------------------- the harness


def clone_times(url: str, work: Path, times: int) -> list[float]:
    seconds = []
    for n in range(times):
        dest = work / f"clone-{n}"
        started = time.perf_counter()
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", url, str(dest)], check=True)
        seconds.append(time.perf_counter() - started)
        shutil.rmtree(dest)
    return seconds


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.repo", description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per target (10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each (2)")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections (32)")
    parser.add_argument("--commits", type=int, default=1000, help="commits in the repository (1000)")
    parser.add_argument("--size", type=int, default=10 * 1024, help="bytes of the file read (10240)")
    parser.add_argument("--clones", type=int, default=5, help="clones per server; the median counts (5)")
    parser.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--no-install", action="store_true", help="never apt-get install wrk")
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers and load generator")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--serve-backend", nargs=2, metavar=("ROOT", "PORT"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_backend:
        serve_backend(args.serve_backend[0], int(args.serve_backend[1]))
        return 0
    server_cpu, load_cpu = (None, None) if args.no_pin or cpu_count() < 2 else (0, 1)
    generator = choose(args.loadgen, args.connections, load_cpu, install=not args.no_install)
    load_before = os.getloadavg()
    started = datetime.now(UTC)
    with ExitStack() as stack:
        stack.callback(generator.close)
        work = Path(tempfile.mkdtemp(prefix="kiln-bench-repo-"))
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        data_dir = work / "data"
        data_dir.mkdir()
        kiln_port, bare_port, backend_port = free_port(), free_port(), free_port()
        base = f"http://127.0.0.1:{kiln_port}"
        env = server_env(data_dir, kiln_port)
        step("kiln migrate")
        dataset.migrate(bin_path("kiln"), env, work / "migrate.log")
        kiln = kiln_server(bin_path("kiln"), kiln_port, env, work / "kiln.log", server_cpu)
        stack.callback(kiln.stop)
        token = {"Private-Token": ROOT_TOKEN}
        kiln.wait_ready(f"{base}/api/v4/user", token)
        project = public_project(base, "bench-repo")
        repo_dir = repository_path(data_dir / "repositories", project["id"])
        step(f"writing {args.commits:,} commits")
        content = dataset.write_history(repo_dir, args.commits, args.size)

        bare = bare_server(
            bare_port,
            {**env, bare_app.REPO_ENV: str(repo_dir), bare_app.FILE_ENV: dataset.REPO_FILE},
            work / "bare.log",
            server_cpu,
        )
        stack.callback(bare.stop)
        backend = Managed(
            "git http-backend",
            [
                sys.executable,
                "-m",
                "bench.repo",
                "--serve-backend",
                str(data_dir / "repositories"),
                str(backend_port),
            ],
            env,
            work / "backend.log",
            server_cpu,
        )
        stack.callback(backend.stop)

        file_path = quote(dataset.REPO_FILE, safe="")
        files_url = f"{base}/api/v4/projects/{project['id']}/repository/files/{file_path}?ref=main"
        targets = [
            Target("bare_blob", "bare GET /blob (pygit2)", f"http://127.0.0.1:{bare_port}/blob"),
            Target(
                "kiln_file",
                f"kiln GET .../repository/files/{file_path}?ref=main",
                files_url,
                token,
            ),
        ]
        bare.wait_ready(targets[0].url, {})
        for target in targets:
            answer = httpx.get(target.url, headers=target.headers, timeout=30)
            if answer.status_code != 200 or base64.b64decode(answer.json()["content"]) != content:
                raise RuntimeError(f"{target.key} answered wrongly: {answer.status_code} {answer.text[:300]}")

        servers = {"bare_blob": bare, "kiln_file": kiln}
        results: dict[str, Measurement] = {}
        for target in targets:
            step(f"{target.label}: {args.warmup:g}s warm-up, {args.duration:g}s measured")
            if args.warmup > 0:
                generator.run(target, args.warmup)
            results[target.key] = measure(generator, target, servers[target.key], (bare, kiln), args.duration)

        backend_url = f"http://127.0.0.1:{backend_port}/{repository_relpath(project['id'])}"
        kiln_url = f"{base}/{project['path_with_namespace']}.git"
        backend.wait_ready(f"{backend_url}/info/refs?service=git-upload-pack", {})
        step(f"cloning {args.clones} times through each server")
        clones = {
            "git_http_backend": clone_times(backend_url, work, args.clones),
            "kiln": clone_times(kiln_url, work, args.clones),
        }

    document = {
        "started_at": started.isoformat(timespec="seconds"),
        "git": git_revision(),
        "settings": {
            "loadgen": generator.describe(),
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "commits": args.commits,
            "file_bytes": args.size,
            "clones": args.clones,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "files": {key: m.as_dict() for key, m in results.items()},
        "clone_seconds": {key: [round(s, 3) for s in runs] for key, runs in clones.items()},
    }
    report(document, results, clones, targets)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"repo-{started.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nresults: {path}")
    return 1 if any(m.failures for m in results.values()) else 0


def report(
    document: dict[str, Any],
    results: dict[str, Measurement],
    clones: dict[str, list[float]],
    targets: list[Target],
) -> None:
    s = document["settings"]
    print()
    print(f"kiln repository benchmark ({document['git']})")
    print(
        f"  {s['commits']:,} commits, {s['file_bytes']:,}-byte file; load: {s['loadgen']}, {s['duration_s']:g}s each"
    )
    print(f"  load average before/after: {s['loadavg_before'][0]:.2f} / {s['loadavg_after'][0]:.2f}")
    print(f"  {'target':<60} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/req':>10} {'errors':>6}")
    for t in targets:
        m = results[t.key]
        print(
            f"  {t.label:<60} {m.rps:>8,.0f} {m.p50_ms:>8.2f} {m.p99_ms:>8.2f}"
            f" {m.cpu_ms_per_request:>10.3f} {m.failures:>6}"
        )
    bare, kiln = results["bare_blob"], results["kiln_file"]
    if bare.rps and kiln.cpu_ms_per_request:
        print(
            f"  ratio kiln/bare: {kiln.rps / bare.rps:.2f} (req/s), "
            f"{bare.cpu_ms_per_request / kiln.cpu_ms_per_request:.2f} (CPU)"
        )
    print()
    for key, runs in clones.items():
        print(
            f"  clone via {key:<18} median {statistics.median(runs):.3f}s  runs {[round(r, 3) for r in runs]}"
        )


if __name__ == "__main__":
    sys.exit(main())
