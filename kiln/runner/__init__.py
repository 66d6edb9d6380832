"""`kiln runner`: a CI runner speaking GitLab's runner protocol, usable against kiln or GitLab.

The package is a client: it never imports the server's modules, only talks HTTP to
`/api/v4/runners`, `/api/v4/jobs/...` as GitLab's own runner does."""

from __future__ import annotations

import platform
import sys

from kiln import __version__

NAME = "kiln-runner"
VERSION = __version__
REVISION = "kiln"

# The protocol's feature flags this runner honours (sent in every `info`).
FEATURES: dict[str, bool] = {
    "variables": True,
    "image": True,
    "services": True,
    "artifacts": True,
    "cache": True,
    "fallback_cache_keys": True,
    "shared": False,
    "upload_multiple_artifacts": True,
    "upload_raw_artifacts": True,
    "session": False,
    "terminal": False,
    "refspecs": True,
    "masking": True,
    "proxy": False,
    "raw_variables": True,
    "artifacts_exclude": True,
    "multi_build_steps": True,
    "trace_reset": True,
    "trace_checksum": True,
    "trace_size": True,
    "vault_secrets": False,
    "cancelable": True,
    "return_exit_code": True,
    "service_variables": True,
    "service_multiple_aliases": True,
    "image_executor_opts": False,
    "service_executor_opts": False,
    "cancel_gracefully": True,
    "native_steps_integration": False,
    "two_phase_job_commit": False,
    "job_inputs": False,
}


def architecture() -> str:
    """The machine in Go's names (GitLab shows and filters on them)."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "i386": "386", "armv7l": "arm"}.get(
        machine, machine
    )


def info(executor: str, shell: str = "bash") -> dict[str, object]:
    """The `info` object every runner call carries."""
    return {
        "name": NAME,
        "version": VERSION,
        "revision": REVISION,
        "platform": sys.platform,
        "architecture": architecture(),
        "executor": executor,
        "shell": shell,
        "features": dict(FEATURES),
    }
