"""The `kiln` command: serve, worker, migrate, user/token administration, and `kiln runner`."""

from __future__ import annotations

import logging
import os
import signal
import threading
from datetime import date
from pathlib import Path
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


runner_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="A CI runner for kiln (or GitLab): register it, run jobs.",
)
app.add_typer(runner_app, name="runner")

ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config", help="The runner configuration file (0600).", show_default="~/.kiln-runner/config.json"
    ),
]


def _runner_failure(message: str) -> typer.Exit:
    typer.echo(f"kiln runner: {message}", err=True)
    return typer.Exit(code=1)


@runner_app.command("register")
def runner_register(
    url: Annotated[str, typer.Option(help="The server's URL, e.g. https://kiln.example.com.")],
    token: Annotated[
        str,
        typer.Option(
            help="A registration token, or a glrt- authentication token of a runner made on the server."
        ),
    ],
    description: Annotated[
        str | None, typer.Option(help="The runner's description; default: the host name.")
    ] = None,
    tag_list: Annotated[str, typer.Option(help="Comma-separated tags.")] = "",
    run_untagged: Annotated[
        bool | None, typer.Option(help="Take untagged jobs; default: yes when no tags are given.")
    ] = None,
    locked: Annotated[bool, typer.Option(help="Lock the runner to the project it registered with.")] = True,
    paused: Annotated[bool, typer.Option(help="Register it paused.")] = False,
    access_level: Annotated[str | None, typer.Option(help="not_protected or ref_protected.")] = None,
    maximum_timeout: Annotated[
        int | None, typer.Option(help="Longest job timeout it accepts (s).", min=600)
    ] = None,
    executor: Annotated[str, typer.Option(help="shell or docker.")] = "shell",
    docker_image: Annotated[
        str, typer.Option(help="Default image of the docker executor.")
    ] = "alpine:latest",
    builds_dir: Annotated[
        str | None, typer.Option(help="Where jobs run (for all runners of this configuration).")
    ] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Where caches are kept (idem).")] = None,
    config: ConfigOption = None,
) -> None:
    """Register a runner with a server and save it in the configuration file."""
    import socket

    from kiln.runner import config as runner_config
    from kiln.runner import info
    from kiln.runner.client import Client, ProtocolError

    if executor not in runner_config.EXECUTORS:
        raise typer.BadParameter("executor must be shell or docker", param_hint="--executor")
    saved = _load_runner_config(config, missing_ok=True)
    client = Client(url)
    tags = [t.strip() for t in tag_list.split(",") if t.strip()]
    try:
        if token.startswith("glrt-"):
            if tags or run_untagged is not None or access_level or maximum_timeout:
                typer.echo(
                    "kiln runner: tags, run-untagged, access level and timeout of a runner made on the "
                    "server are set there; ignoring them here",
                    err=True,
                )
            found = client.verify(token, saved.system_id, info(executor))
            if found is None:
                raise _runner_failure("the server refused this authentication token")
            entry = runner_config.RunnerEntry(
                url=url, token=token, id=found.get("id"), origin="authentication",
                token_expires_at=found.get("token_expires_at"),
            )  # fmt: skip
        else:
            created = client.register(
                token,
                description=description or socket.gethostname(),
                tags=tags,
                run_untagged=run_untagged if run_untagged is not None else not tags,
                locked=locked,
                paused=paused,
                access_level=access_level,
                maximum_timeout=maximum_timeout,
                info=info(executor),
            )
            if not created.get("token"):
                raise _runner_failure("the server answered without a runner token")
            entry = runner_config.RunnerEntry(
                url=url, token=str(created["token"]), id=created.get("id"), origin="registration",
                token_expires_at=created.get("token_expires_at"),
            )  # fmt: skip
    except ProtocolError as refused:
        raise _runner_failure(f"registration failed: {refused}") from None
    finally:
        client.close()
    entry.description = description or socket.gethostname()
    entry.executor = executor
    entry.docker_image = docker_image
    saved.runners.append(entry)
    if builds_dir:
        saved.builds_dir = str(Path(builds_dir).expanduser().resolve())
    if cache_dir:
        saved.cache_dir = str(Path(cache_dir).expanduser().resolve())
    where = runner_config.save(saved, config)
    typer.echo(f"kiln runner: runner {entry.id} ({entry.short_token}) registered; saved in {where}", err=True)


def _load_runner_config(path: str | None, *, missing_ok: bool = False) -> Any:
    from kiln.runner import config as runner_config

    try:
        return runner_config.load(path, missing_ok=missing_ok)
    except runner_config.ConfigError as bad:
        raise _runner_failure(str(bad)) from None


@runner_app.command("run")
def runner_run(
    config: ConfigOption = None,
    concurrent: Annotated[
        int | None, typer.Option(help="Jobs run at once; default: the configuration's (1).", min=1)
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Take one job, run it, exit.")] = False,
    poll_interval: Annotated[
        float | None, typer.Option(help="Seconds between polls when no job came (default 3).", min=0.1)
    ] = None,
) -> None:
    """Poll for jobs and run them until stopped.

    SIGINT/SIGTERM: take no new jobs and let the running ones finish; a second signal
    aborts them."""
    from kiln.runner import display
    from kiln.runner.client import ProtocolError
    from kiln.runner.run import RunnerProcess

    saved = _load_runner_config(config)
    slots = 1 if once else (concurrent or saved.concurrent)
    screen = display.for_terminal(slots)
    try:
        process = RunnerProcess(
            saved, concurrent=concurrent, once=once, poll_interval=poll_interval, display=screen
        )
    except ProtocolError as refused:
        screen.close()
        raise _runner_failure(str(refused)) from None
    restore_signals = process.install_signals()
    screen.message(f"kiln runner: {len(saved.runners)} runner(s), {process.concurrent} slot(s)")
    try:
        results = process.run()
    finally:
        restore_signals()
        screen.close()
    failed = sum(1 for _job, outcome in results.outcomes if outcome.state != "success")
    typer.echo(f"kiln runner: stopped after {len(results.outcomes)} job(s), {failed} failed", err=True)


@runner_app.command("verify")
def runner_verify(
    config: ConfigOption = None,
    delete: Annotated[bool, typer.Option("--delete", help="Remove runners the server refuses.")] = False,
) -> None:
    """Check each configured runner's token with its server."""
    from kiln.runner import config as runner_config
    from kiln.runner import info
    from kiln.runner.client import Client, ProtocolError

    saved = _load_runner_config(config)
    kept = []
    refused = 0
    for entry in saved.runners:
        client = Client(entry.url)
        try:
            found = client.verify(entry.token, saved.system_id, info(entry.executor))
        except ProtocolError as failed:
            typer.echo(f"{entry.short_token} {entry.url}: cannot verify: {failed}")
            kept.append(entry)
            continue
        finally:
            client.close()
        if found is None:
            refused += 1
            typer.echo(f"{entry.short_token} {entry.url}: refused" + (" (removed)" if delete else ""))
            if not delete:
                kept.append(entry)
        else:
            typer.echo(f"{entry.short_token} {entry.url}: valid")
            kept.append(entry)
    if delete and refused:
        saved.runners = kept
        runner_config.save(saved, config)
    if refused and not delete:
        raise typer.Exit(code=1)


@runner_app.command("unregister")
def runner_unregister(
    config: ConfigOption = None,
    token: Annotated[str | None, typer.Option(help="The runner's token (or its first characters).")] = None,
    all_runners: Annotated[bool, typer.Option("--all", help="Unregister every configured runner.")] = False,
) -> None:
    """Unregister a runner and remove it from the configuration.

    A runner registered here is deleted on its server; one made on the server (glrt-
    token) only forgets this machine."""
    from kiln.runner import config as runner_config
    from kiln.runner.client import Client

    saved = _load_runner_config(config)
    if all_runners:
        chosen = list(saved.runners)
    elif token:
        chosen = [
            r
            for r in saved.runners
            if r.token == token or r.short_token.startswith(token.removeprefix("glrt-"))
        ]
    elif len(saved.runners) == 1:
        chosen = list(saved.runners)
    else:
        raise typer.BadParameter("several runners are configured: name one with --token, or use --all")
    if not chosen:
        raise _runner_failure("no configured runner has that token")
    failed = 0
    for entry in chosen:
        client = Client(entry.url)
        try:
            if entry.origin == "authentication":
                done = client.unregister_manager(entry.token, saved.system_id)
            else:
                done = client.unregister(entry.token)
        finally:
            client.close()
        if done:
            saved.runners.remove(entry)
            typer.echo(f"kiln runner: {entry.short_token} unregistered", err=True)
        else:
            failed += 1
            typer.echo(f"kiln runner: {entry.short_token}: the server did not unregister it", err=True)
    runner_config.save(saved, config)
    if failed:
        raise typer.Exit(code=1)
