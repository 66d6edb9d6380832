"""The runner protocol's HTTP calls (`/api/v4/runners`, `/api/v4/jobs`), over httpx.

Every call returns what the caller decides on (status, the job-state headers) instead of
raising: a network failure is status 0, which callers treat like a 5xx (retry later)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

# GitLab's Workhorse holds jobs/request up to 50 s; wait longer than that for the answer.
LONG_POLL_TIMEOUT = 70.0
DEFAULT_TIMEOUT = 30.0
MAX_UPDATE_INTERVAL = 15 * 60.0


@dataclass
class JobState:
    """What a job call's answer says about the job on the server."""

    status: int
    remote_state: str = ""
    update_interval: float | None = None
    remote_range: str = ""

    @property
    def canceled(self) -> bool:
        """The server ended the job (canceled or failed it): stop at once."""
        return self.remote_state in ("canceled", "failed") or self.status in (403, 404)

    @property
    def canceling(self) -> bool:
        """The server asks for a graceful stop (after_script still runs)."""
        return self.remote_state == "canceling"

    def resume_offset(self) -> int | None:
        """Where the server's trace ends, from its `Range: 0-<n>` answer to a mismatch."""
        parts = self.remote_range.split("-")
        if len(parts) == 2 and parts[1].strip().isdigit():
            return int(parts[1])
        return None


@dataclass
class JobRequest:
    """The answer to `POST jobs/request`: a job, nothing, or a refusal."""

    status: int
    job: dict[str, Any] | None = None
    last_update: str | None = None

    @property
    def forbidden(self) -> bool:
        """401/403: the token is no good, stop asking with it (other answers: ask again)."""
        return self.status in (401, 403)


class ProtocolError(Exception):
    """An answer the caller cannot go on from (registration refused, bad JSON)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _job_state(response: httpx.Response) -> JobState:
    interval: float | None = None
    raw = response.headers.get("X-GitLab-Trace-Update-Interval", "")
    if raw.strip().isdigit():
        interval = min(float(raw), MAX_UPDATE_INTERVAL)
    return JobState(
        status=response.status_code,
        remote_state=response.headers.get("Job-Status", "").strip().lower(),
        update_interval=interval or None,
        remote_range=response.headers.get("Range", ""),
    )


class Client:
    """One server's runner API. Thread-safe (httpx's client is)."""

    def __init__(
        self, url: str, *, transport: httpx.BaseTransport | None = None, verify: bool = True
    ) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url + "/api/v4/",
            timeout=DEFAULT_TIMEOUT,
            transport=transport,
            verify=verify,
            headers={"User-Agent": "kiln-runner"},
        )

    def close(self) -> None:
        self._http.close()

    def _send(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> httpx.Response | None:
        merged = {"X-Request-Id": uuid.uuid4().hex, **(headers or {})}
        try:
            return self._http.request(
                method, path, headers=merged, timeout=timeout or DEFAULT_TIMEOUT, **kwargs
            )
        except httpx.HTTPError:
            return None

    # Runner registration -------------------------------------------------------------

    def register(
        self,
        registration_token: str,
        *,
        description: str,
        tags: list[str],
        run_untagged: bool,
        locked: bool,
        info: dict[str, Any],
        access_level: str | None = None,
        maximum_timeout: int | None = None,
        paused: bool = False,
    ) -> dict[str, Any]:
        """Create a runner with a (legacy) registration token; its answer holds the runner's
        authentication token."""
        body: dict[str, Any] = {
            "token": registration_token,
            "description": description,
            "tag_list": ",".join(tags),
            "run_untagged": run_untagged,
            "locked": locked,
            "paused": paused,
            "info": info,
        }
        if access_level:
            body["access_level"] = access_level
        if maximum_timeout:
            body["maximum_timeout"] = maximum_timeout
        response = self._send("POST", "runners", json=body)
        if response is None:
            raise ProtocolError(0, f"cannot reach {self.url}")
        if response.status_code != 201:
            raise ProtocolError(response.status_code, _message(response, "registration refused"))
        return _json_object(response)

    def verify(self, token: str, system_id: str, info: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The runner as the server knows it, or None when the token is refused (403)."""
        body: dict[str, Any] = {"token": token, "system_id": system_id}
        if info is not None:
            body["info"] = info
        response = self._send("POST", "runners/verify", json=body)
        if response is None:
            raise ProtocolError(0, f"cannot reach {self.url}")
        if response.status_code in (401, 403):
            return None
        if response.status_code != 200:
            raise ProtocolError(response.status_code, _message(response, "verification failed"))
        return _json_object(response)

    def unregister(self, token: str) -> bool:
        """Delete a runner made by registration."""
        response = self._send("DELETE", "runners", json={"token": token})
        return response is not None and response.status_code == 204

    def unregister_manager(self, token: str, system_id: str) -> bool:
        """Forget this machine of a runner created elsewhere (glrt- tokens)."""
        response = self._send("DELETE", "runners/managers", json={"token": token, "system_id": system_id})
        return response is not None and response.status_code == 204

    # Jobs --------------------------------------------------------------------------------

    def request_job(
        self, token: str, system_id: str, info: dict[str, Any], last_update: str | None = None
    ) -> JobRequest:
        """Long-poll for a job."""
        body: dict[str, Any] = {"token": token, "system_id": system_id, "info": info}
        if last_update:
            body["last_update"] = last_update
        response = self._send("POST", "jobs/request", json=body, timeout=LONG_POLL_TIMEOUT)
        if response is None:
            return JobRequest(status=0)
        last = response.headers.get("X-GitLab-Last-Update") or None
        if response.status_code == 201:
            try:
                job = response.json()
            except ValueError:
                return JobRequest(status=0, last_update=last)
            if not isinstance(job, dict) or "id" not in job or "token" not in job:
                return JobRequest(status=0, last_update=last)
            return JobRequest(status=201, job=job, last_update=last)
        return JobRequest(status=response.status_code, last_update=last)

    def patch_trace(self, job_id: int, job_token: str, chunk: bytes, start: int) -> JobState:
        """Append `chunk` at `start`; `Content-Range` end is inclusive as GitLab's runner sends it."""
        headers = {
            "JOB-TOKEN": job_token,
            "Content-Range": f"{start}-{start + len(chunk) - 1}",
            "Content-Type": "text/plain",
        }
        response = self._send(
            "PATCH", f"jobs/{job_id}/trace", params={"debug_trace": "false"}, headers=headers, content=chunk
        )
        if response is None:
            return JobState(status=0)
        return _job_state(response)

    def update_job(self, job_id: int, job_token: str, body: dict[str, Any]) -> JobState:
        """`PUT jobs/:id`: the job's state (final, or `running` as a keep-alive)."""
        response = self._send(
            "PUT", f"jobs/{job_id}", headers={"JOB-TOKEN": job_token}, json={"token": job_token, **body}
        )
        if response is None:
            return JobState(status=0)
        return _job_state(response)

    def upload_artifact(
        self,
        job_id: int,
        job_token: str,
        archive: Path,
        *,
        filename: str,
        artifact_format: str,
        artifact_type: str,
        expire_in: str | None,
    ) -> tuple[int, str]:
        """Upload one artifact file; (status, the server's message)."""
        params = {"artifact_format": artifact_format, "artifact_type": artifact_type}
        if expire_in:
            params["expire_in"] = expire_in
        with archive.open("rb") as content:
            response = self._send(
                "POST",
                f"jobs/{job_id}/artifacts",
                params=params,
                headers={"JOB-TOKEN": job_token},
                files={"file": (filename, content, "application/octet-stream")},
                timeout=600.0,
            )
        if response is None:
            return 0, "network error"
        return response.status_code, _message(response, response.reason_phrase)

    def download_artifacts(self, job_id: int, token: str, target: Path) -> int:
        """Stream job `job_id`'s artifacts archive into `target` (following redirects to
        object storage); the status."""
        headers = {"JOB-TOKEN": token, "X-Request-Id": uuid.uuid4().hex}
        try:
            with self._http.stream(
                "GET",
                f"jobs/{job_id}/artifacts",
                headers=headers,
                params={"direct_download": "true"},
                follow_redirects=True,
                timeout=600.0,
            ) as response:
                if response.status_code != 200:
                    return response.status_code
                with target.open("wb") as out:
                    for piece in response.iter_bytes():
                        out.write(piece)
                return 200
        except httpx.HTTPError:
            return 0


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        raise ProtocolError(response.status_code, "the server answered with no JSON") from None
    if not isinstance(data, dict):
        raise ProtocolError(response.status_code, "the server answered with no JSON object")
    return data


def _message(response: httpx.Response, default: str) -> str:
    """The `message`/`error` of an error answer, for the user to read."""
    try:
        data = response.json()
    except ValueError:
        return f"{response.status_code} {default}"
    if isinstance(data, dict):
        found = data.get("message") or data.get("error")
        if found:
            return f"{response.status_code} {found}"
    return f"{response.status_code} {default}"
