"""A small server speaking the runner protocol as GitLab does (registration, verify,
jobs/request, trace PATCH with ranges, PUT jobs/:id, artifacts), so the runner is tested
against the protocol itself rather than against kiln's implementation of it."""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
import zlib
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Job:
    payload: dict[str, Any]
    trace: bytearray = field(default_factory=bytearray)
    state: str = "pending"
    failure_reason: str | None = None
    exit_code: int | None = None
    output: dict[str, Any] | None = None
    artifacts: list[tuple[dict[str, str], str, bytes]] = field(default_factory=list)
    content_ranges: list[str] = field(default_factory=list)
    # Test knobs.
    cancel_on: bytes | None = None
    cancel_gracefully_on: bytes | None = None
    canceling: bool = False
    forget_first_chunk: bool = False
    accepted_before_done: int = 0
    canceled: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def id(self) -> int:
        return int(self.payload["id"])

    @property
    def token(self) -> str:
        return str(self.payload["token"])

    def text(self) -> str:
        return self.trace.decode(errors="replace")

    def archive(self) -> bytes | None:
        for params, _name, data in self.artifacts:
            if params.get("artifact_type", "archive") == "archive":
                return data
        return None


class ProtocolServer:
    """The server's state plus a threaded HTTP server on a free local port."""

    def __init__(self, registration_token: str = "reg-token", *, artifact_limit: int = 1024 * 1024) -> None:
        self.registration_token = registration_token
        self.artifact_limit = artifact_limit
        self.runners: dict[str, dict[str, Any]] = {}
        self.queue: list[Job] = []
        self.jobs: dict[int, Job] = {}
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self._runner_ids = itertools.count(100)
        self.queue_version = "1"
        self.trace_interval: int | None = None
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ProtocolServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add_runner(self, token: str | None = None, **attributes: Any) -> str:
        token = token or "glrt-" + secrets.token_hex(10)
        self.runners[token] = {"id": next(self._runner_ids), **attributes}
        return token

    def add_job(
        self,
        script: list[str],
        *,
        after_script: list[str] | None = None,
        variables: list[dict[str, Any]] | None = None,
        timeout: int = 3600,
        artifacts: list[dict[str, Any]] | None = None,
        cache: list[dict[str, Any]] | None = None,
        dependencies: list[Job] | None = None,
        git_info: dict[str, Any] | None = None,
        project_path: str = "group/project",
        **knobs: Any,
    ) -> Job:
        """Queue a job as GitLab would hand it out."""
        job_id = next(self._ids)
        token = "job-token-" + secrets.token_hex(8)
        steps = [
            {
                "name": "script",
                "script": script,
                "timeout": timeout,
                "when": "on_success",
                "allow_failure": False,
            }
        ]
        if after_script:
            steps.append(
                {
                    "name": "after_script",
                    "script": after_script,
                    "timeout": 60,
                    "when": "always",
                    "allow_failure": True,
                }
            )
        base_variables = [
            {"key": "CI_JOB_ID", "value": str(job_id), "public": True, "masked": False},
            {"key": "CI_JOB_TOKEN", "value": token, "public": False, "masked": True},
            {"key": "CI_PROJECT_PATH", "value": project_path, "public": True, "masked": False},
            {"key": "CI_PIPELINE_ID", "value": "7", "public": True, "masked": False},
        ]
        if git_info is None:
            base_variables.append({"key": "GIT_STRATEGY", "value": "none", "public": True, "masked": False})
        payload: dict[str, Any] = {
            "id": job_id,
            "token": token,
            "allow_git_fetch": True,
            "job_info": {
                "name": f"job{job_id}",
                "stage": "test",
                "project_id": 1,
                "project_name": project_path.rsplit("/", 1)[-1],
                "project_full_path": project_path,
            },
            "git_info": git_info or {"repo_url": "", "ref": "main", "sha": "", "refspecs": [], "depth": 0},
            "runner_info": {"timeout": timeout},
            "variables": base_variables + (variables or []),
            "steps": steps,
            "image": None,
            "services": [],
            "artifacts": artifacts or [],
            "cache": cache or [],
            "credentials": [],
            "dependencies": [self._dependency(dep, token) for dep in dependencies or []],
            "features": {"trace_sections": True},
        }
        job = Job(payload=payload, **knobs)
        with self.lock:
            self.jobs[job_id] = job
            self.queue.append(job)
            self.queue_version = str(int(self.queue_version) + 1)
        return job

    def _dependency(self, dep: Job, token: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": dep.id, "name": dep.payload["job_info"]["name"], "token": token}
        archive = dep.archive()
        if archive is not None:
            entry["artifacts_file"] = {"filename": "artifacts.zip", "size": len(archive)}
        return entry

    def wait(self, job: Job, timeout: float = 30.0) -> Job:
        assert job.done.wait(timeout), f"job {job.id} did not finish: {job.text()}"
        return job

    def job_by_token(self, token: str) -> Job | None:
        for job in self.jobs.values():
            if job.token == token:
                return job
        return None


def _handler(server: ProtocolServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _answer(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self, method: str) -> None:
            parts = urlsplit(self.path)
            path = parts.path.removeprefix("/api/v4/")
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            raw = self._body()
            kind = self.headers.get("Content-Type") or ""
            body: Any = raw
            if "json" in kind and raw:
                body = json.loads(raw)
            server.requests.append((method, path, dict(self.headers), body))
            segments = path.split("/")
            if path == "runners" and method == "POST":
                return self.register(body)
            if path == "runners" and method == "DELETE":
                return self.unregister(body)
            if path == "runners/managers" and method == "DELETE":
                return self._answer(204 if body.get("token") in server.runners else 403)
            if path == "runners/verify" and method == "POST":
                return self.verify(body)
            if path == "jobs/request" and method == "POST":
                return self.request_job(body)
            if segments[0] == "jobs" and len(segments) >= 2 and segments[1].isdigit():
                job = server.jobs.get(int(segments[1]))
                rest = "/".join(segments[2:])
                if rest == "" and method == "PUT":
                    return self.update(job, body)
                if rest == "trace" and method == "PATCH":
                    return self.trace(job, raw)
                if rest == "artifacts" and method == "POST":
                    return self.upload(job, query, raw, kind)
                if rest == "artifacts" and method == "GET":
                    return self.download(job)
            return self._answer(404, {"message": "404 Not Found"})

        def do_POST(self) -> None:
            self._route("POST")

        def do_PUT(self) -> None:
            self._route("PUT")

        def do_PATCH(self) -> None:
            self._route("PATCH")

        def do_GET(self) -> None:
            self._route("GET")

        def do_DELETE(self) -> None:
            self._route("DELETE")

        # Runners ---------------------------------------------------------------------

        def register(self, body: dict[str, Any]) -> None:
            if body.get("token") != server.registration_token:
                return self._answer(403, {"message": "403 Forbidden"})
            token = server.add_runner(
                description=body.get("description"),
                tag_list=body.get("tag_list"),
                run_untagged=body.get("run_untagged"),
                locked=body.get("locked"),
            )
            runner = server.runners[token]
            return self._answer(201, {"id": runner["id"], "token": token, "token_expires_at": None})

        def unregister(self, body: dict[str, Any]) -> None:
            if server.runners.pop(body.get("token"), None) is None:
                return self._answer(403, {"message": "403 Forbidden"})
            return self._answer(204)

        def verify(self, body: dict[str, Any]) -> None:
            runner = server.runners.get(body.get("token"))
            if runner is None:
                return self._answer(403, {"message": "403 Forbidden"})
            runner["system_id"] = body.get("system_id")
            return self._answer(200, {"id": runner["id"], "token": body["token"], "token_expires_at": None})

        def request_job(self, body: dict[str, Any]) -> None:
            if body.get("token") not in server.runners:
                return self._answer(403, {"message": "403 Forbidden"})
            headers = {"X-GitLab-Last-Update": server.queue_version}
            with server.lock:
                job = server.queue.pop(0) if server.queue else None
                if job is not None:
                    job.state = "running"
            if job is None:
                return self._answer(204, headers=headers)
            return self._answer(201, job.payload, headers)

        # Jobs ------------------------------------------------------------------------

        def _state_headers(self, job: Job) -> dict[str, str]:
            status = "canceled" if job.canceled else ("canceling" if job.canceling else job.state)
            headers = {"Job-Status": status}
            if server.trace_interval:
                headers["X-GitLab-Trace-Update-Interval"] = str(server.trace_interval)
            return headers

        def _authorized(self, job: Job | None) -> bool:
            return job is not None and self.headers.get("JOB-TOKEN") == job.token

        def trace(self, job: Job | None, chunk: bytes) -> None:
            if not self._authorized(job) or job is None:
                return self._answer(403, {"message": "403 Forbidden"})
            if job.canceled or job.state in ("success", "failed"):
                return self._answer(
                    403, {"message": "403 Forbidden - Job is not running"}, self._state_headers(job)
                )
            content_range = self.headers.get("Content-Range") or ""
            job.content_ranges.append(content_range)
            start = int(content_range.split("-")[0])
            if start != len(job.trace):
                return self._answer(416, None, {"Range": f"0-{len(job.trace)}", **self._state_headers(job)})
            if job.forget_first_chunk:
                job.forget_first_chunk = False  # accepted, then lost: the next chunk mismatches
            else:
                job.trace += chunk
            if job.cancel_on is not None and job.cancel_on in job.trace:
                job.canceled = True
            if job.cancel_gracefully_on is not None and job.cancel_gracefully_on in job.trace:
                job.canceling = True
            return self._answer(202, None, {"Range": f"0-{len(job.trace)}", **self._state_headers(job)})

        def update(self, job: Job | None, body: dict[str, Any]) -> None:
            if job is None or body.get("token") != job.token:
                return self._answer(403, {"message": "403 Forbidden"})
            if job.canceled:
                job.done.set()
                return self._answer(
                    403, {"message": "403 Forbidden - Job is not running"}, {"Job-Status": "canceled"}
                )
            if body.get("state") == "running":
                return self._answer(200, None, self._state_headers(job))
            if job.accepted_before_done > 0:
                job.accepted_before_done -= 1
                return self._answer(202, None, {"X-GitLab-Trace-Update-Interval": "1"})
            job.state = str(body.get("state"))
            job.failure_reason = body.get("failure_reason")
            job.exit_code = body.get("exit_code")
            job.output = body.get("output")
            job.done.set()
            return self._answer(200, None, {"Job-Status": job.state})

        def upload(self, job: Job | None, query: dict[str, str], raw: bytes, kind: str) -> None:
            if not self._authorized(job) or job is None:
                return self._answer(403, {"message": "403 Forbidden"})
            message = BytesParser(policy=HTTP).parsebytes(
                b"Content-Type: " + kind.encode() + b"\r\n\r\n" + raw
            )
            for part in message.iter_parts():
                if part.get_param("name", header="content-disposition") == "file":
                    data = part.get_payload(decode=True)
                    if len(data) > server.artifact_limit:
                        return self._answer(413, {"message": "413 Request Entity Too Large"})
                    job.artifacts.append((query, str(part.get_filename()), data))
                    return self._answer(201, {})
            return self._answer(400, {"error": "file is missing"})

        def download(self, job: Job | None) -> None:
            asking = server.job_by_token(self.headers.get("JOB-TOKEN") or "")
            if job is None or asking is None:
                return self._answer(403 if job else 404, {"message": "403 Forbidden"})
            archive = job.archive()
            if archive is None:
                return self._answer(404, {"message": "404 Not Found"})
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(archive)))
            self.end_headers()
            self.wfile.write(archive)

    return Handler


def crc32_of(data: bytes) -> str:
    return f"crc32:{zlib.crc32(data):08x}"


def wait_until(check: Any, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "condition never held"
        time.sleep(0.02)
