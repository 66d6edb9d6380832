"""The docker executor: each script runs in a fresh container of the job's image (or the
runner's default image) with the job's folder mounted at /builds; services run as linked
containers. Uses the docker CLI, so any daemon the CLI reaches works."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kiln.runner.executor_shell import Output, RunResult, run_process

CONTAINER_BUILDS = "/builds"
LAUNCH = 'if command -v bash >/dev/null 2>&1; then exec bash "$0"; else exec sh "$0"; fi'


class DockerError(Exception):
    """The daemon could not do what a job needs (an image not pulled, a service not started)."""


def available() -> bool:
    """Whether a docker daemon answers."""
    if shutil.which("docker") is None:
        return False
    try:
        return (
            subprocess.run(["docker", "info"], check=False, capture_output=True, timeout=20).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def service_aliases(service: dict[str, Any]) -> list[str]:
    """The host names a service answers to: its aliases, else names made from its image
    (`tutum/wordpress:latest` → `tutum__wordpress` and `tutum-wordpress`)."""
    alias = str(service.get("alias") or "")
    if alias:
        return [a for a in alias.replace(",", " ").split() if a]
    image = str(service.get("name") or "")
    base = image.split("@", maxsplit=1)[0]
    if ":" in base.rsplit("/", 1)[-1]:
        base = base.rsplit(":", 1)[0]
    base = re.sub(r":\d+(?=/)", "", base)  # a registry's port: no colon in a host name
    return sorted({base.replace("/", "__"), base.replace("/", "-")})


def _image_name(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name") or "")
    return str(value or "")


class DockerExecutor:
    """Scripts in containers; git, caches and artifacts are handled on this machine in the
    mounted folder."""

    name = "docker"
    shell = "bash"

    def __init__(self, default_image: str, job: dict[str, Any], *, docker: str = "docker") -> None:
        self.docker = docker
        self.image = _image_name(job.get("image")) or default_image
        image = job.get("image")
        self.entrypoint: list[str] | None = image.get("entrypoint") if isinstance(image, dict) else None
        self.services: list[dict[str, Any]] = [
            s if isinstance(s, dict) else {"name": str(s)} for s in job.get("services") or []
        ]
        self.prefix = f"kiln-job-{job.get('id')}-{uuid.uuid4().hex[:8]}"
        self.builds_dir: Path | None = None
        self._containers: list[str] = []
        self._links: list[str] = []
        self._step = 0

    def _docker(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([self.docker, *args], capture_output=True, check=False, env=env)

    def _pull(self, image: str, output: Output) -> None:
        if self._docker("image", "inspect", image).returncode == 0:
            output(f"Using locally found image {image}\n".encode())
            return
        output(f"Pulling docker image {image} ...\n".encode())
        pulled = self._docker("pull", image)
        if pulled.returncode != 0:
            raise DockerError(
                f"failed to pull image {image!r}: {pulled.stderr.decode(errors='replace').strip()}"
            )

    def prepare(self, job_id: int, builds_dir: Path, output: Output) -> None:
        self.builds_dir = builds_dir
        output(f"Using Docker executor with image {self.image} ...\n".encode())
        self._pull(self.image, output)
        for index, service in enumerate(self.services):
            image = _image_name(service)
            self._pull(image, output)
            name = f"{self.prefix}-svc-{index}"
            argv = ["run", "-d", "--name", name]
            values: dict[str, str] = {}
            for variable in service.get("variables") or []:
                if isinstance(variable, dict) and variable.get("key"):
                    values[str(variable["key"])] = str(variable.get("value") or "")
                    argv += ["-e", str(variable["key"])]
            if service.get("entrypoint"):
                argv += ["--entrypoint", str(service["entrypoint"][0])]
            argv.append(image)
            if service.get("entrypoint"):
                argv += [str(a) for a in service["entrypoint"][1:]]
            argv += [str(a) for a in service.get("command") or []]
            output(f"Starting service {image} ...\n".encode())
            started = self._docker(*argv, env={**os.environ, **values})
            if started.returncode != 0:
                raise DockerError(
                    f"failed to start service {image!r}: {started.stderr.decode(errors='replace').strip()}"
                )
            self._containers.append(name)
            self._links += [f"{name}:{alias}" for alias in service_aliases(service)]

    def path(self, host_path: Path) -> str:
        assert self.builds_dir is not None
        relative = host_path.relative_to(self.builds_dir).as_posix()
        return CONTAINER_BUILDS if relative == "." else f"{CONTAINER_BUILDS}/{relative}"

    def command(self, script: Path, env: dict[str, str], cwd: Path, name: str) -> list[str]:
        """The `docker run` line; values reach the container through the CLI's environment
        (`-e KEY`), never on its command line."""
        assert self.builds_dir is not None
        argv = [
            self.docker, "run", "--rm", "--name", name,
            "-v", f"{self.builds_dir}:{CONTAINER_BUILDS}",
            "-w", self.path(cwd),
        ]  # fmt: skip
        for key in env:
            argv += ["-e", key]
        for link in self._links:
            argv += ["--link", link]
        if self.entrypoint:
            argv += ["--entrypoint", str(self.entrypoint[0])]
        else:
            argv += ["--entrypoint", ""]
        argv.append(self.image)
        if self.entrypoint:
            argv += [str(a) for a in self.entrypoint[1:]]
        argv += ["sh", "-c", LAUNCH, self.path(script)]
        return argv

    def run(
        self,
        script: Path,
        env: dict[str, str],
        cwd: Path,
        *,
        output: Output,
        deadline: float | None,
        cancel: threading.Event,
    ) -> RunResult:
        self._step += 1
        name = f"{self.prefix}-{self._step}"
        argv: Sequence[str] = self.command(script, env, cwd, name)
        # The CLI needs its own environment (PATH, DOCKER_HOST) besides the job's values.
        process_env = {**os.environ, **env}

        def stop(_process: subprocess.Popen[bytes]) -> None:
            self._docker("kill", name)

        return run_process(
            argv, env=process_env, cwd=cwd, output=output, deadline=deadline, cancel=cancel, stop=stop
        )

    def cleanup(self) -> None:
        for name in self._containers:
            self._docker("rm", "-f", "-v", name)
        self._containers.clear()
        if self.builds_dir is not None and self._step:
            # Files the container made as root: removed from inside, where that is allowed.
            self._docker(
                "run", "--rm", "--entrypoint", "", "-v", f"{self.builds_dir}:{CONTAINER_BUILDS}",
                self.image, "sh", "-c", f"rm -rf {CONTAINER_BUILDS}/* {CONTAINER_BUILDS}/.[!.]*",
            )  # fmt: skip
