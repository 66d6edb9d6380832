"""The runner's configuration file: the runners registered here and where jobs run.

JSON, kept 0600 because it holds runner authentication tokens."""

from __future__ import annotations

import json
import os
import secrets
import string
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path("~/.kiln-runner/config.json")
EXECUTORS = ("shell", "docker")


class ConfigError(Exception):
    """A configuration file that cannot be read or holds no usable runner."""


def new_system_id() -> str:
    """A machine identity like GitLab's runner makes one (`r_` + 12 characters): the server
    tells runner managers sharing one token apart by it."""
    alphabet = string.ascii_letters + string.digits
    return "r_" + "".join(secrets.choice(alphabet) for _ in range(12))


@dataclass
class RunnerEntry:
    """One registered runner: its server, its authentication token and how it runs jobs."""

    url: str
    token: str
    id: int | None = None
    description: str = ""
    executor: str = "shell"
    docker_image: str = "alpine:latest"
    # "registration" when we created it (unregister deletes it), "authentication" when a
    # glrt- token made elsewhere was given (unregister only forgets this machine).
    origin: str = "registration"
    token_expires_at: str | None = None

    @property
    def short_token(self) -> str:
        """The token's first characters after its prefix, as logs show runners."""
        return self.token.removeprefix("glrt-")[:8]


@dataclass
class Config:
    """The whole file: global settings and the runners."""

    concurrent: int = 1
    check_interval: float = 3.0
    builds_dir: str = "~/.kiln-runner/builds"
    cache_dir: str = "~/.kiln-runner/cache"
    system_id: str = field(default_factory=new_system_id)
    output_limit: int = 4 * 1024 * 1024
    runners: list[RunnerEntry] = field(default_factory=list)

    def builds_path(self) -> Path:
        return Path(self.builds_dir).expanduser()

    def cache_path(self) -> Path:
        return Path(self.cache_dir).expanduser()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Config:
        if not isinstance(data, dict):
            raise ConfigError("the configuration is not a JSON object")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "runners"}
        runners_data = data.get("runners") or []
        if not isinstance(runners_data, list):
            raise ConfigError("runners is not a list")
        runners = []
        for item in runners_data:
            if not isinstance(item, dict) or not item.get("url") or not item.get("token"):
                raise ConfigError("each runner needs a url and a token")
            entry = RunnerEntry(**{k: v for k, v in item.items() if k in RunnerEntry.__dataclass_fields__})
            if entry.executor not in EXECUTORS:
                raise ConfigError(f"unknown executor {entry.executor!r}")
            runners.append(entry)
        try:
            return cls(runners=runners, **known)
        except TypeError as bad:
            raise ConfigError(str(bad)) from None


def resolve(path: str | Path | None) -> Path:
    return Path(path or DEFAULT_PATH).expanduser()


def load(path: str | Path | None, *, missing_ok: bool = False) -> Config:
    """The configuration at `path`; a fresh one when it does not exist and `missing_ok`."""
    where = resolve(path)
    try:
        raw = where.read_text()
    except FileNotFoundError:
        if missing_ok:
            return Config()
        raise ConfigError(f"no configuration at {where}: register a runner first") from None
    try:
        return Config.from_json(json.loads(raw))
    except json.JSONDecodeError as bad:
        raise ConfigError(f"{where} is not valid JSON: {bad}") from None


def save(config: Config, path: str | Path | None) -> Path:
    """Write atomically with mode 0600 (the file holds tokens), its folder 0700."""
    where = resolve(path)
    where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = where.with_name(where.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(config.to_json(), out, indent=2)
        out.write("\n")
    os.chmod(temporary, 0o600)
    os.replace(temporary, where)
    return where
