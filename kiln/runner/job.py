"""Running one job: sources, cache, dependencies' artifacts, the steps, then cache, artifacts
and the final state, with the log streamed to the server throughout."""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kiln.runner import NAME, REVISION, VERSION, architecture, artifacts, info
from kiln.runner.cache import CacheSpec, LocalCache
from kiln.runner.client import Client
from kiln.runner.config import Config, RunnerEntry
from kiln.runner.executor_docker import DockerError, DockerExecutor
from kiln.runner.executor_shell import Executor, RunResult, ShellExecutor, run_process, script_text
from kiln.runner.trace import TraceBuffer, TraceUploader

DEFAULT_TIMEOUT = 3600
AFTER_SCRIPT_TIMEOUT = 300
VARIABLE_REFERENCE = re.compile(r"\$\$|\$\{(\w+)\}|\$(\w+)")

GREEN = "\x1b[32;1m"
RED = "\x1b[31;1m"
YELLOW = "\x1b[0;33m"
CYAN = "\x1b[36;1m"
RESET = "\x1b[0;m"


class StageFailed(Exception):
    """A stage before or after the script failed; the job fails with `reason`."""

    def __init__(self, message: str, reason: str = "script_failure", exit_code: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.exit_code = exit_code


@dataclass
class Outcome:
    """How a job ended, as reported in the final `PUT jobs/:id`."""

    state: str
    failure_reason: str | None = None
    exit_code: int | None = None
    canceled: bool = False
    reported: bool = False


@dataclass
class JobSettings:
    """Timings a runner process uses for every job (tests shorten them)."""

    trace_interval: float = 3.0
    keepalive: float = 30.0
    update_pause: float = 1.0
    update_deadline: float = 300.0


def expand(value: str, known: dict[str, str]) -> str:
    """`$VAR` and `${VAR}` replaced by earlier variables' values (unknown: empty), `$$` → `$`."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return known.get(match.group(1) or match.group(2), "")

    return VARIABLE_REFERENCE.sub(replace, value)


def clean_url(url: str) -> str:
    """A URL without its credentials, for the log."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def project_folder(job: dict[str, Any]) -> PurePosixPath:
    """The project's folder under the job's builds folder, from its full path; never `..`."""
    job_info = job.get("job_info") or {}
    raw = str(job_info.get("project_full_path") or "")
    if not raw:
        for variable in job.get("variables") or []:
            if isinstance(variable, dict) and variable.get("key") == "CI_PROJECT_PATH":
                raw = str(variable.get("value") or "")
    parts = [p for p in raw.split("/") if p not in ("", ".", "..")]
    return PurePosixPath(*parts) if parts else PurePosixPath(f"project-{job_info.get('project_id', 0)}")


def duration_text(seconds: int) -> str:
    """Go's duration form (`1h0m0s`), as GitLab's timeout messages show it."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


@dataclass
class Step:
    """One `steps[]` entry."""

    name: str
    script: list[str]
    timeout: int | None = None
    when: str = "on_success"
    allow_failure: bool = False

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> Step:
        timeout = data.get("timeout")
        return cls(
            name=str(data.get("name") or "script"),
            script=[str(line) for line in data.get("script") or []],
            timeout=int(timeout) if isinstance(timeout, int | float) and timeout > 0 else None,
            when=str(data.get("when") or "on_success"),
            allow_failure=bool(data.get("allow_failure")),
        )

    def runs(self, succeeded: bool) -> bool:
        return self.when == "always" or (self.when == "on_failure") != succeeded


@dataclass
class Folders:
    """Where a job lives on this machine: `<job>/<project path>` and `<project path>.tmp`."""

    job: Path
    project: Path
    tmp: Path = field(init=False)

    def __post_init__(self) -> None:
        self.tmp = self.project.with_name(self.project.name + ".tmp")


class JobRun:
    """One job, from the payload `jobs/request` gave to the final state."""

    def __init__(
        self,
        client: Client,
        runner: RunnerEntry,
        config: Config,
        job: dict[str, Any],
        *,
        slot: int = 0,
        abort: threading.Event | None = None,
        settings: JobSettings | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.runner = runner
        self.config = config
        self.job = job
        self.id = int(job["id"])
        self.token = str(job["token"])
        self.slot = slot
        self.abort = abort or threading.Event()
        self.settings = settings or JobSettings()
        self.cancel = threading.Event()
        self.graceful_cancel = False
        self.variables: list[dict[str, Any]] = [v for v in job.get("variables") or [] if isinstance(v, dict)]
        secrets = [str(v.get("value") or "") for v in self.variables if v.get("masked")]
        self.trace = TraceBuffer([*secrets, self.token], limit=config.output_limit)
        self.trace.on_line = on_line
        self.uploader = TraceUploader(
            client,
            self.id,
            self.token,
            self.trace,
            interval=self.settings.trace_interval,
            keepalive=self.settings.keepalive,
            on_cancel=self._canceled,
        )
        timeout = (job.get("runner_info") or {}).get("timeout")
        self.timeout = int(timeout) if isinstance(timeout, int | float) and timeout > 0 else DEFAULT_TIMEOUT
        self.deadline = 0.0
        self.executor: Executor = (
            DockerExecutor(runner.docker_image, job) if runner.executor == "docker" else ShellExecutor()
        )

    # The log -------------------------------------------------------------------------

    def log(self, text: str, color: str = "") -> None:
        self.trace.write(f"{color}{text}{RESET if color else ''}\n")

    def section(self, name: str, header: str) -> Callable[[], None]:
        """Open a collapsible log section; the function returned closes it."""
        self.trace.write(f"\x1b[0Ksection_start:{int(time.time())}:{name}\r\x1b[0K{CYAN}{header}{RESET}\n")

        def close() -> None:
            self.trace.write(f"\x1b[0Ksection_end:{int(time.time())}:{name}\r\x1b[0K")

        return close

    def _canceled(self, graceful: bool) -> None:
        if not self.cancel.is_set():
            self.graceful_cancel = graceful
            self.cancel.set()

    # The job ---------------------------------------------------------------------------

    def run(self) -> Outcome:
        """Run the job and report its end; never raises."""
        self.uploader.start()
        self.deadline = time.monotonic() + self.timeout
        stop_watch = threading.Thread(target=self._watch_abort, daemon=True)
        stop_watch.start()
        folders: Folders | None = None
        try:
            folders = self._folders()
            outcome = self._execute(folders)
        except StageFailed as failed:
            self.log(f"ERROR: Job failed: {failed}", RED)
            outcome = Outcome("failed", failed.reason, failed.exit_code)
        except Exception as failure:
            self.log(f"ERROR: Job failed (system failure): {failure}", RED)
            outcome = Outcome("failed", "runner_system_failure")
        finally:
            try:
                self.executor.cleanup()
            except Exception as failure:
                self.log(f"WARNING: cleaning up the executor failed: {failure}", YELLOW)
            if folders is not None:
                shutil.rmtree(folders.job, ignore_errors=True)
        self.uploader.finish()
        outcome.reported = self._report(outcome)
        self.cancel.set()  # ends the abort watcher
        return outcome

    def _watch_abort(self) -> None:
        while not self.cancel.wait(0.2):
            if self.abort.is_set():
                self.cancel.set()
                return

    def _folders(self) -> Folders:
        base = self.config.builds_path() / self.runner.short_token / f"{self.id}-{uuid.uuid4().hex[:8]}"
        project = base.joinpath(*project_folder(self.job).parts)
        folders = Folders(job=base, project=project)
        project.mkdir(parents=True, mode=0o700)
        folders.tmp.mkdir(mode=0o700)
        return folders

    def _execute(self, folders: Folders) -> Outcome:
        self.log(f"Running with {NAME} {VERSION} ({REVISION})")
        self.log(f"  on {self.runner.description or NAME} {self.runner.short_token}")
        close = self.section("prepare_executor", f'Preparing the "{self.executor.name}" executor')
        try:
            self.executor.prepare(self.id, folders.job, self.trace.write)
        except DockerError as failed:
            raise StageFailed(str(failed), "runner_system_failure") from None
        close()
        close = self.section("prepare_script", "Preparing environment")
        self.log(f"Running on {socket.gethostname()}...")
        env = self._environment(folders)
        close()

        self._get_sources(folders)
        self._restore_caches(folders)
        self._download_dependencies(folders)

        result: RunResult | None = None
        succeeded = True
        steps = [Step.from_payload(s) for s in self.job.get("steps") or [] if isinstance(s, dict)]
        after = [step for step in steps if step.name == "after_script"]
        for step in steps:
            if step.name == "after_script" or self.cancel.is_set() or not step.runs(succeeded):
                continue
            close = self.section(f"step_{step.name}", f'Executing "step_{step.name}" stage of the job script')
            deadline = self.deadline
            if step.timeout:
                deadline = min(deadline, time.monotonic() + step.timeout)
            result = self._run_script(folders, f"step_{step.name}", step.script, env, deadline)
            close()
            if result.exit_code != 0 and not step.allow_failure:
                succeeded = False
            if result.timed_out or result.canceled:
                break

        timed_out = result is not None and result.timed_out
        canceled = self.cancel.is_set() and not timed_out
        for step in after:
            if canceled and not self.graceful_cancel:
                break
            status = "canceled" if canceled else ("success" if succeeded else "failed")
            self._after_script(folders, step, {**env, "CI_JOB_STATUS": status})

        if canceled:
            if self.abort.is_set():
                self.log("ERROR: Job failed (system failure): the runner was stopped", RED)
                return Outcome("failed", "runner_system_failure", canceled=True)
            self.log("ERROR: Job failed: canceled", RED)
            return Outcome("failed", "unknown_failure", canceled=True)

        self._save_caches(folders, succeeded)
        upload_error = self._upload_artifacts(folders, succeeded)

        if timed_out:
            self.log(
                f"ERROR: Job failed: execution took longer than {duration_text(self.timeout)} seconds", RED
            )
            return Outcome("failed", "job_execution_timeout")
        if not succeeded:
            code = result.exit_code if result is not None else 1
            self.log(f"ERROR: Job failed: exit code {code}", RED)
            return Outcome("failed", "script_failure", code)
        if upload_error:
            raise StageFailed(upload_error)
        self.log("Job succeeded", GREEN)
        return Outcome("success")

    # Environment -----------------------------------------------------------------------

    def _environment(self, folders: Folders) -> dict[str, str]:
        """The job's variables, expanded, file-type ones written to files, with what the
        runner itself defines (paths, concurrency ids, runner identity)."""
        executor = self.executor
        base: dict[str, str] = dict(os.environ) if executor.name == "shell" else {}
        runner_defined = {
            "CI_RUNNER_SHORT_TOKEN": self.runner.short_token,
            "CI_RUNNER_VERSION": VERSION,
            "CI_RUNNER_REVISION": REVISION,
            "CI_RUNNER_EXECUTABLE_ARCH": f"{os.uname().sysname.lower()}/{architecture()}",
            "CI_SERVER": "yes",
            "CI_CONCURRENT_ID": str(self.slot),
            "CI_CONCURRENT_PROJECT_ID": str(self.slot),
            "CI_JOB_TIMEOUT": str(self.timeout),
            "CI_SHARED_ENVIRONMENT" if executor.name == "shell" else "CI_DISPOSABLE_ENVIRONMENT": "true",
        }
        if isinstance(executor, DockerExecutor):
            runner_defined["CI_JOB_IMAGE"] = executor.image
        paths = {
            "CI_BUILDS_DIR": executor.path(folders.job),
            "CI_PROJECT_DIR": executor.path(folders.project),
            "CI_JOB_STATUS": "running",
        }
        known: dict[str, str] = {**base, **runner_defined, **paths}
        job_values: dict[str, str] = {}
        for variable in self.variables:
            key = str(variable.get("key") or "")
            if not key or key in paths:
                continue
            value = str(variable.get("value") if variable.get("value") is not None else "")
            if not variable.get("raw"):
                value = expand(value, {**known, **job_values})
            if variable.get("file"):
                target = folders.tmp / key
                descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(descriptor, "w") as out:
                    out.write(value)
                value = executor.path(target)
            job_values[key] = value
        return {**base, **runner_defined, **job_values, **paths}

    # Sources ---------------------------------------------------------------------------

    def _git(self, folders: Folders, *args: str) -> None:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"}
        result = run_process(
            ["git", "-c", "advice.detachedHead=false", *args],
            env=env,
            cwd=folders.project,
            output=self.trace.write,
            deadline=self.deadline,
            cancel=self.cancel,
        )
        if result.timed_out:
            raise StageFailed(
                f"execution took longer than {duration_text(self.timeout)} seconds", "job_execution_timeout"
            )
        if result.canceled:
            raise StageFailed("canceled", "unknown_failure")
        if result.exit_code != 0:
            raise StageFailed(f"exit code {result.exit_code}", "script_failure", result.exit_code)

    def _variable(self, key: str) -> str | None:
        for variable in self.variables:
            if variable.get("key") == key:
                return str(variable.get("value") or "")
        return None

    def _get_sources(self, folders: Folders) -> None:
        git_info = self.job.get("git_info") or {}
        strategy = (self._variable("GIT_STRATEGY") or "fetch").lower()
        close = self.section("get_sources", "Getting source from Git repository")
        if strategy == "none" or not git_info.get("repo_url"):
            self.log("Skipping Git repository setup", YELLOW)
            close()
            return
        repo_url = str(git_info["repo_url"])
        depth = git_info.get("depth") or 0
        sha = str(git_info.get("sha") or "")
        ref = str(git_info.get("ref") or "")
        refspecs = [str(r) for r in git_info.get("refspecs") or []] or [
            "+refs/heads/*:refs/remotes/origin/*",
            "+refs/tags/*:refs/tags/*",
        ]
        if depth:
            self.log(f"Fetching changes with git depth set to {depth}...", GREEN)
        else:
            self.log("Fetching changes...", GREEN)
        self.log(f"Initialized empty Git repository in {self.executor.path(folders.project)}/.git/")
        object_format = str(git_info.get("repo_object_format") or "sha1")
        self._git(folders, "init", "-q", f"--object-format={object_format}", ".")
        self._git(folders, "remote", "add", "origin", repo_url)
        self.log(f"Created fresh repository for {clean_url(repo_url)}", GREEN)
        fetch = ["fetch", "origin", "--prune", "--quiet", "--no-recurse-submodules"]
        if depth:
            fetch.append(f"--depth={int(depth)}")
        self._git(folders, *fetch, *refspecs)
        if sha:
            self.log(f"Checking out {sha[:8]} as detached HEAD (ref is {ref})...", GREEN)
            self._git(folders, "checkout", "-f", "-q", sha)
            self._git(folders, "clean", "-ffdx", "-q")
        close()

    # Cache and artifacts ----------------------------------------------------------------

    def _project_key(self) -> str:
        job_info = self.job.get("job_info") or {}
        return str(job_info.get("project_full_path") or job_info.get("project_id") or "project")

    def _caches(self) -> list[CacheSpec]:
        return [CacheSpec.from_payload(c) for c in self.job.get("cache") or [] if isinstance(c, dict)]

    def _restore_caches(self, folders: Folders) -> None:
        caches = [c for c in self._caches() if c.pulls]
        if not caches:
            return
        store = LocalCache(self.config.cache_path())
        close = self.section("restore_cache", "Restoring cache")
        for spec in caches:
            self.log(f"Checking cache for {spec.key}...", GREEN)
            try:
                used = store.restore(self._project_key(), spec, folders.project)
            except artifacts.ArchiveError as bad:
                self.log(f"WARNING: cache {spec.key} not restored: {bad}", YELLOW)
                continue
            if used is None:
                self.log(f"WARNING: no cache found for {spec.key}", YELLOW)
            else:
                self.log(f"Successfully extracted cache ({used})", GREEN)
        close()

    def _save_caches(self, folders: Folders, succeeded: bool) -> None:
        caches = [c for c in self._caches() if c.pushes and c.saved_when(succeeded)]
        if not caches:
            return
        store = LocalCache(self.config.cache_path())
        close = self.section(
            "archive_cache", "Saving cache for " + ("successful" if succeeded else "failed") + " job"
        )
        for spec in caches:
            self.log(f"Creating cache {spec.key}...", GREEN)
            try:
                count = store.save(self._project_key(), spec, folders.project)
            except OSError as failed:
                self.log(f"WARNING: cache {spec.key} not saved: {failed}", YELLOW)
                continue
            if count is None:
                self.log(f"WARNING: {', '.join(spec.paths) or 'untracked'}: no matching files", YELLOW)
            else:
                self.log(f"Created cache ({count} files)", GREEN)
        close()

    def _download_dependencies(self, folders: Folders) -> None:
        dependencies = [
            d for d in self.job.get("dependencies") or [] if isinstance(d, dict) and d.get("artifacts_file")
        ]
        if not dependencies:
            return
        close = self.section("download_artifacts", "Downloading artifacts")
        for dependency in dependencies:
            dep_id = int(dependency["id"])
            name = dependency.get("name") or dep_id
            self.log(f"Downloading artifacts for {name} ({dep_id})...", GREEN)
            target = folders.tmp / f"artifacts-{dep_id}.zip"
            status = self.client.download_artifacts(
                dep_id, str(dependency.get("token") or self.token), target
            )
            if status != 200:
                raise StageFailed(
                    f"downloading artifacts of {name} ({dep_id}) failed with status {status or 'network error'}"
                )
            try:
                artifacts.extract(target, folders.project)
            except artifacts.ArchiveError as bad:
                raise StageFailed(f"the artifacts of {name} ({dep_id}) cannot be extracted: {bad}") from None
            finally:
                target.unlink(missing_ok=True)
        close()

    def _upload_artifacts(self, folders: Folders, succeeded: bool) -> str | None:
        """Upload the artifacts due now; the error that fails the job, if one."""
        wanted = [
            a
            for a in self.job.get("artifacts") or []
            if isinstance(a, dict)
            and (a.get("when") or "on_success") in ("always", "on_success" if succeeded else "on_failure")
        ]
        if not wanted:
            return None
        close = self.section(
            "upload_artifacts_on_" + ("success" if succeeded else "failure"),
            "Uploading artifacts for " + ("successful" if succeeded else "failed") + " job",
        )
        try:
            for spec in wanted:
                error = self._upload_one(folders, spec)
                if error:
                    self.log(f"ERROR: {error}", RED)
                    return error
            return None
        finally:
            close()

    def _upload_one(self, folders: Folders, spec: dict[str, Any]) -> str | None:
        artifact_type = str(spec.get("artifact_type") or "archive")
        artifact_format = str(
            spec.get("artifact_format") or ("zip" if artifact_type == "archive" else "gzip")
        )
        self.log("Uploading artifacts...", GREEN)
        chosen = artifacts.select(
            folders.project,
            [str(p) for p in spec.get("paths") or []],
            exclude=[str(p) for p in spec.get("exclude") or []],
            untracked=bool(spec.get("untracked")),
        )
        for pattern in chosen.unmatched:
            self.log(
                f"WARNING: {pattern}: no matching files. Ensure that the artifact path is relative to the working directory ({self.executor.path(folders.project)})",
                YELLOW,
            )
        if not chosen.files:
            self.log("ERROR: No files to upload", RED)
            return None
        self.log(f"Found {len(chosen.files)} matching artifact files and directories", GREEN)
        handle, temporary = tempfile.mkstemp(dir=folders.tmp)
        os.close(handle)
        archive = Path(temporary)
        base_name = str(spec.get("name") or "artifacts")
        if artifact_format == "zip":
            artifacts.write_zip(folders.project, chosen.files, archive)
            filename = base_name + ".zip"
        elif artifact_format == "gzip":
            artifacts.write_gzip(folders.project, chosen.files, archive)
            filename = base_name + ".gz"
        else:  # raw: one file as it is
            shutil.copyfile(folders.project / chosen.files[0], archive)
            filename = PurePosixPath(chosen.files[0]).name
        try:
            for attempt in range(3):
                status, message = self.client.upload_artifact(
                    self.id,
                    self.token,
                    archive,
                    filename=filename,
                    artifact_format=artifact_format,
                    artifact_type=artifact_type,
                    expire_in=str(spec["expire_in"]) if spec.get("expire_in") else None,
                )
                if status == 201:
                    self.log(f'Uploading artifacts as "{artifact_type}" to coordinator... 201 Created', GREEN)
                    return None
                if status == 413:
                    return (
                        f'Uploading artifacts as "{artifact_type}" to coordinator... too large archive '
                        f"({archive.stat().st_size} bytes): {message}"
                    )
                if 400 <= status < 500:
                    return f'Uploading artifacts as "{artifact_type}" to coordinator... {message}'
                self.log(
                    f'WARNING: Uploading artifacts as "{artifact_type}" failed ({message}); retrying', YELLOW
                )
                time.sleep(min(2**attempt, 5) * self.settings.update_pause)
            return f'Uploading artifacts as "{artifact_type}" to coordinator... failed: {message}'
        finally:
            archive.unlink(missing_ok=True)

    # Scripts ---------------------------------------------------------------------------

    def _run_script(
        self, folders: Folders, name: str, lines: list[str], env: dict[str, str], deadline: float
    ) -> RunResult:
        script = folders.tmp / f"{name}.sh"
        script.write_text(script_text(lines))
        script.chmod(0o700)
        return self.executor.run(
            script, env, folders.project, output=self.trace.write, deadline=deadline, cancel=self.cancel
        )

    def _after_script(self, folders: Folders, step: Step, env: dict[str, str]) -> None:
        close = self.section("after_script", "Running after_script")
        timeout = step.timeout or AFTER_SCRIPT_TIMEOUT
        # The job's cancel already fired (it may be why this runs): only an aborting runner
        # and the after_script timeout end it.
        own_cancel = threading.Event()
        stop = threading.Thread(target=self._forward_cancel, args=(own_cancel,), daemon=True)
        stop.start()
        result = self.executor.run(
            self._after_file(folders, step),
            env,
            folders.project,
            output=self.trace.write,
            deadline=time.monotonic() + timeout,
            cancel=own_cancel,
        )
        own_cancel.set()
        if result.timed_out:
            self.log(f"WARNING: after_script timed out after {duration_text(timeout)}", YELLOW)
        elif result.exit_code != 0:
            self.log(
                f"WARNING: after_script failed, but job will continue unaffected: exit code {result.exit_code}",
                YELLOW,
            )
        close()

    def _after_file(self, folders: Folders, step: Step) -> Path:
        script = folders.tmp / "after_script.sh"
        script.write_text(script_text(step.script))
        script.chmod(0o700)
        return script

    def _forward_cancel(self, own: threading.Event) -> None:
        while not own.wait(0.2):
            if self.abort.is_set():
                own.set()

    # Report ----------------------------------------------------------------------------

    def _report(self, outcome: Outcome) -> bool:
        """`PUT jobs/:id` until the server has it (200), waiting out 202s; True when done."""
        body: dict[str, Any] = {
            "info": info(self.executor.name, self.executor.shell),
            "state": outcome.state,
            "output": {"checksum": self.trace.checksum(), "bytesize": self.trace.size()},
        }
        if outcome.failure_reason:
            body["failure_reason"] = outcome.failure_reason
        if outcome.exit_code is not None:
            body["exit_code"] = outcome.exit_code
        give_up = time.monotonic() + self.settings.update_deadline
        while True:
            state = self.client.update_job(self.id, self.token, body)
            if state.status == 200:
                return True
            if state.status in (403, 404) or state.remote_state in ("canceled", "failed"):
                return False
            if state.status == 412:
                self.uploader.finish()
            if time.monotonic() >= give_up:
                return False
            time.sleep(self.settings.update_pause if state.status == 202 else 2 * self.settings.update_pause)
