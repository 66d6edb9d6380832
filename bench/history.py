"""`python -m bench.history`: blame and path-limited history of a file with 200+ commits in a
15,000-commit repository, through kiln's API (in-process ASGI client, SQLite), against kiln's
aims: blame ≤ 200 ms, path history ≤ 30 ms per request (median of repeated requests; the
first request at a tip, which walks the whole history once, is reported beside it).

The repository is written with `git fast-import` straight into the project's storage path,
then read through the routes a client calls."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from litestar.testing import TestClient

from kiln import migrate
from kiln.app import create_app
from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker
from kiln.git.maintenance import refresh_commit_graph
from kiln.runtime import Runtime
from kiln.services.repositories import store
from kiln.services.users import bootstrap_root

TOKEN = "bench-history-root-token"


def fast_import_stream(commits: int, touches: int) -> bytes:
    """`commits` commits on main; every commits//touches-th one rewrites one line of hot.txt."""
    every = max(1, commits // touches)
    lines = [f"line {i}\n" for i in range(400)]
    out: list[bytes] = []
    for n in range(1, commits + 1):
        files: list[tuple[str, bytes]] = [(f"other/{n % 500}.txt", f"change {n}\n".encode())]
        if n == 1 or n % every == 0:
            lines[(n * 7) % len(lines)] = f"line changed by commit {n}\n"
            files.append(("hot.txt", "".join(lines).encode()))
        msg = f"commit {n}\n".encode()
        out.append(b"commit refs/heads/main\n")
        out.append(f"committer Bench <bench@example.com> {1_600_000_000 + n * 60} +0000\n".encode())
        out.append(b"data %d\n%s" % (len(msg), msg))
        for path, data in files:
            out.append(f"M 100644 inline {path}\n".encode())
            out.append(b"data %d\n%s\n" % (len(data), data))
    return b"".join(out)


def timed(client: TestClient, url: str, runs: int) -> tuple[float, list[float]]:
    """The first request's time, then `runs` more."""
    samples = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        r = client.get(url, headers={"Private-Token": TOKEN})
        samples.append((time.perf_counter() - start) * 1000)
        if r.status_code != 200:
            raise SystemExit(f"{url}: {r.status_code} {r.text[:200]}")
    return samples[0], samples[1:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=15_000)
    parser.add_argument("--touches", type=int, default=220)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-bench-history-") as tmp:
        settings = Settings(
            data_dir=Path(tmp), root_password="bench-password-123", root_token=TOKEN, workers=0
        )
        settings.ensure_dirs()
        engine = make_engine(settings)
        migrate.upgrade(engine)
        rt = Runtime(settings=settings, engine=engine, sessions=make_sessionmaker(engine))
        with rt.sessions() as db:
            bootstrap_root(db, settings)
        with TestClient(create_app(runtime=rt), base_url=settings.external_url) as client:
            project = client.post(
                "/api/v4/projects", json={"name": "history"}, headers={"Private-Token": TOKEN}
            ).json()
            path = store(settings).path(project["id"])
            print(f"bench: writing {args.commits:,} commits with git fast-import", flush=True)
            subprocess.run(
                ["git", "fast-import", "--quiet"],
                cwd=path,
                input=fast_import_stream(args.commits, args.touches),
                check=True,
            )
            # What kiln's repositories.maintain job does after every push.
            refresh_commit_graph(path)
            touched = subprocess.run(
                ["git", "rev-list", "--count", "main", "--", "hot.txt"],
                cwd=path,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            base = f"/api/v4/projects/{project['id']}/repository"
            blame = timed(client, f"{base}/files/hot.txt/blame?ref=main", args.runs)
            history = timed(client, f"{base}/commits?path=hot.txt&ref_name=main&per_page=20", args.runs)
        engine.dispose()
    print(f"\nkiln history benchmark: {args.commits:,} commits, hot.txt touched by {touched}")
    for name, (first, samples), aim in (("blame", blame, 200), ("path history", history, 30)):
        p50 = statistics.median(samples)
        p90 = sorted(samples)[int(len(samples) * 0.9) - 1]
        verdict = "ok" if p50 <= aim else "ABOVE AIM"
        print(
            f"  {name:<14} first {first:7.1f} ms   p50 {p50:7.1f} ms   p90 {p90:7.1f} ms"
            f"   aim ≤ {aim} ms   {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
