"""The `kiln` command: serve, worker, migrate, and user/token administration."""

from __future__ import annotations

import logging
import os
import signal
import threading
from datetime import date
from types import FrameType
from typing import Annotated, Any

import typer
import uvicorn
from sqlalchemy import Engine

from kiln import jobs, migrate, observability
from kiln.auth import server_secret
from kiln.auth.tokens import PAT_SCOPES
from kiln.config import SERVE_PARENT_ENV, Settings, load_settings
from kiln.runtime import Runtime
from kiln.services import project_creation
from kiln.services import tokens as token_service
from kiln.services import users as user_service

app = typer.Typer(no_args_is_help=True, add_completion=False, help="kiln: a GitLab-compatible forge.")


def prepare(rt: Runtime) -> None:
    """Migrate the database and make sure root exists; prints a generated password once."""
    with migrate.exclusive(rt.engine, rt.settings.data_dir):
        migrate.upgrade(rt.engine)
        with rt.sessions() as db:
            _root, generated = user_service.bootstrap_root(db, rt.settings)
            project_creation.digest_runners_tokens(db, rt.settings)
    saved = rt.settings.data_dir / "initial_root_password"
    if generated:
        saved.write_text(generated + "\n")
        saved.chmod(0o600)
    if rt.settings.root_password:
        typer.echo("kiln: root credentials: root / (KILN_ROOT_PASSWORD)", err=True)
    elif saved.exists():
        typer.echo(f"kiln: root credentials: root / {saved.read_text().strip()}", err=True)
        typer.echo(f"kiln: (generated at first start, kept in {saved}; delete it once noted)", err=True)


def require_server_secret(settings: Settings) -> None:
    """The server secret read (and its file made) before anything is served or run: a key
    too short to derive secrets from, or a data dir where it cannot be kept, stops kiln at
    start, not at the first project created."""
    try:
        server_secret.key(settings)
    except server_secret.ServerSecretError as refused:
        typer.echo(f"kiln: cannot start: {refused}", err=True)
        raise typer.Exit(code=1) from None
    except OSError as failed:
        typer.echo(
            f"kiln: cannot start: the server secret cannot be kept in {settings.data_dir}: {failed}", err=True
        )
        raise typer.Exit(code=1) from None


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity), not every CPU of the machine."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    processes: Annotated[
        int | None,
        typer.Option(help="HTTP processes; default: one per usable CPU.", min=1, envvar="KILN_PROCESSES"),
    ] = None,
) -> None:
    """Run migrations, then serve the API.

    With one process, it serves HTTP and runs the job worker threads itself. With several,
    this process supervises HTTP processes (restarting any that dies) and runs the job
    worker threads, so jobs go on however loaded HTTP is. SIGTERM stops it within
    KILN_SHUTDOWN_TIMEOUT: open requests and running jobs get that long to finish."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    processes = processes or usable_cores()
    settings = load_settings()
    require_server_secret(settings)
    observability.prepare_serving(settings.data_dir, processes)
    rt = Runtime.build(settings)
    prepare(rt)
    typer.echo(
        f"kiln: serving {settings.external_url} on http://{host}:{port} with {processes} process(es)",
        err=True,
    )
    common: dict[str, Any] = {
        "host": host,
        "port": port,
        "loop": "uvloop",
        "http": "httptools",
        "log_level": "warning",
        "proxy_headers": True,
        "timeout_graceful_shutdown": max(1, int(settings.shutdown_timeout)),
    }
    if processes == 1:
        from kiln.app import create_app

        uvicorn.run(create_app(runtime=rt, exit_on_overrun=True), **common)
        return
    pool = jobs.Worker(rt.sessions, settings, threads=settings.workers) if settings.workers > 0 else None
    if pool is not None:
        pool.start()
    # The HTTP processes read their settings from the environment: they leave the jobs to
    # this one, and end when it does, however it ends.
    os.environ["KILN_WORKERS"] = "0"
    os.environ[SERVE_PARENT_ENV] = str(os.getpid())
    try:
        uvicorn.run(
            "kiln.app:create_app_from_env",
            factory=True,
            workers=processes,
            # A process still starting on a busy machine is not a hung one: uvicorn's 5 s
            # would kill and restart it before it ever answers.
            timeout_worker_healthcheck=30,
            **common,
        )
    finally:
        if pool is not None:
            pool.stop(settings.shutdown_timeout)
        rt.engine.dispose()


@app.command()
def worker(
    threads: Annotated[
        int | None, typer.Option(help="Worker threads; default KILN_WORKERS (at least 1).", min=1)
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="Serve Prometheus text at /-/metrics on this port (off by default).",
            envvar="KILN_WORKER_METRICS_PORT",
            min=0,
            max=65535,
        ),
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="Address of the metrics port.", envvar="KILN_WORKER_METRICS_HOST")
    ] = "127.0.0.1",
) -> None:
    """Run migrations, then run queued jobs until SIGTERM or SIGINT (the jobs running then
    get KILN_SHUTDOWN_TIMEOUT seconds to finish)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    require_server_secret(settings)
    rt = Runtime.build(settings)
    prepare(rt)
    observability.instrument(Engine)  # the jobs' statements, on every engine of this process
    if metrics_port is not None:
        server = observability.serve_metrics(
            metrics_host, metrics_port, rt.sessions, settings.monitoring_networks
        )
        host, port = server.server_address[:2]
        typer.echo(f"kiln: worker metrics at http://{host}:{port}/-/metrics", err=True)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        # A second signal kills at once, for a job that will not finish.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    pool = jobs.Worker(rt.sessions, settings, threads=threads or max(settings.workers, 1))
    pool.start()
    typer.echo(f"kiln: worker running {pool.size} thread(s)", err=True)
    while not stop.wait(1.0):
        pass
    typer.echo("kiln: worker stopping after the running jobs", err=True)
    # A job still running at the deadline is left to its lease: it runs again elsewhere.
    pool.stop(settings.shutdown_timeout)
    rt.engine.dispose()
    typer.echo("kiln: worker stopped", err=True)


@app.command("migrate")
def migrate_command() -> None:
    """Bring the database schema up to date (serve does this too)."""
    rt = Runtime.build(load_settings())
    prepare(rt)
    typer.echo("kiln: database is up to date", err=True)


@app.command("token")
def create_token(
    username: Annotated[str, typer.Argument(help="Whose token.")],
    name: Annotated[str, typer.Option(help="Token name.")] = "cli",
    scopes: Annotated[str, typer.Option(help="Comma-separated scopes.")] = "api",
    expires_at: Annotated[str | None, typer.Option(help="YYYY-MM-DD; none means no expiry.")] = None,
) -> None:
    """Create a personal access token and print it."""
    wanted = [s for s in scopes.split(",") if s]
    unknown = [s for s in wanted if s not in PAT_SCOPES]
    if unknown:
        raise typer.BadParameter(f"unknown scopes: {', '.join(unknown)}")
    rt = Runtime.build(load_settings())
    prepare(rt)
    from kiln.queries.users import by_id_or_username

    with rt.sessions() as db:
        user = by_id_or_username(db, username)
        if user is None:
            raise typer.BadParameter(f"no user {username!r}")
        expiry = date.fromisoformat(expires_at) if expires_at else None
        typer.echo(token_service.issue_for_cli(db, user, name, wanted, expiry))


def main() -> None:
    app()
