"""Settings read once from the environment (KILN_*) and passed down; no globals elsewhere."""

from __future__ import annotations

from functools import cache
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# Set by `kiln serve` for its HTTP processes: the pid of the process they must not outlive.
SERVE_PARENT_ENV = "KILN_SERVE_PARENT_PID"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KILN_", extra="ignore")

    # Who may read /-/metrics: comma-separated addresses or networks, GitLab's
    # monitoring_whitelist (and its default, this machine only). Others get 404.
    monitoring_whitelist: str = "127.0.0.0/8,::1/128"

    data_dir: Path = Path(".kiln-data")
    database_url: str | None = None
    external_url: str = "http://127.0.0.1:8080"
    root_password: str | None = None
    root_token: str | None = None
    # In-process job worker threads of `kiln serve`; 0 leaves the queue to `kiln worker`.
    workers: int = 2
    # Idle workers look for due jobs this often (seconds); enqueuing in-process wakes them sooner.
    job_poll_interval: float = 0.5
    # A claimed job is its worker's for this long; after that (a crashed worker) it runs again.
    job_lease_seconds: int = 300
    # Retry after a failure: this many seconds, doubling per attempt, at most the maximum.
    job_backoff_seconds: float = 5.0
    job_backoff_max_seconds: float = 3600.0
    # Operators switch impersonation off here, as GitLab's `impersonation_enabled`.
    impersonation_enabled: bool = True
    # Requests whose body is larger are refused with 413 before they are parsed. Git's pack
    # uploads are streamed to git and not counted here (see max_push_bytes).
    max_request_body_bytes: int = 100 * 1024 * 1024
    # A JSON body is parsed whole, and the parser holds the interpreter while it works (about
    # 2 ms a MiB): past this it would hold up every other request. Larger files go by git push,
    # or as multipart uploads, which are read a piece at a time.
    max_json_body_bytes: int = 32 * 1024 * 1024
    # Largest pack one `git push` may send (git's receive.maxInputSize); 0: no limit.
    max_push_bytes: int = 0
    # argon2id cost; tests lower it, production keeps the library's defaults.
    password_time_cost: int = 3
    password_memory_cost: int = 65536
    oauth_access_token_ttl: int = 7200
    # Highest lifetime of a personal access token, in days (GitLab's default is 365).
    max_token_lifetime_days: int = 365
    # With admin mode on, admin powers through a token need its admin_mode scope.
    admin_mode: bool = False
    sql_echo: bool = False
    # Database connections each process keeps (pool size) and may open beyond that (overflow);
    # unset: 8 + 16 on SQLite, 20 + 10 on PostgreSQL. A thread that finds none free waits at
    # most db_pool_timeout seconds, then its request answers 503. A connection opened beyond
    # the pool size is closed when given back: on PostgreSQL that is a new server process, and
    # its prepared statements, for the next request that needs one (with 10 kept, 16 clients
    # opened 30 connections a second and every statement was planned afresh on each).
    db_pool_size: int | None = None
    db_max_overflow: int | None = None
    db_pool_timeout: float = 10.0
    # A write on SQLite waits at most this many seconds for the database's one writer (held
    # by another request, a job, another process), then its request answers 503; as long as
    # SQLite's own busy_timeout by default.
    sqlite_writer_timeout: float = 30.0
    # Requests that may use the database at once in one HTTP process; 0: what the pool can
    # serve with room for this process's job worker threads. Requests beyond it wait in a
    # queue of request_queue places for at most request_queue_timeout seconds, then get a
    # fast 503 with Retry-After.
    max_db_requests: int = 0
    request_queue: int = 64
    request_queue_timeout: float = 0.05
    # While a process's event loop runs more than this many seconds behind (more arrives
    # than its core can answer), it refuses new requests with 503 until it has caught up;
    # 0 switches that off. Probes (/-/health, /-/liveness, /api/v4/version) are always served.
    max_loop_lag: float = 0.05
    # What a refused client is told to wait before trying again (seconds).
    retry_after_seconds: int = 1
    # Threads per HTTP process for work that waits (git, archives); bounded, never grown.
    request_threads: int = 8
    # Event loops on threads of their own for reads (API GETs) while they wait on the
    # database server (kiln/api/_read_loops.py); unset: 8 on PostgreSQL, none on SQLite.
    read_threads: int | None = None
    # SIGTERM: open requests and running jobs get this long to finish, then the process exits.
    shutdown_timeout: float = 10.0
    # What one request may make kiln read of a repository. (What a diff shows at most is set
    # at run time, as in GitLab: the application settings diff_max_files, diff_max_lines and
    # diff_max_patch_bytes, applied as kiln.git.diffs says.)
    # A blob larger than this is large (GitLab's MAX_BLOB_SIZE, 10 MiB): the files and blobs
    # JSON stream it and serve it at most large_blob_downloads_per_minute times a minute per
    # project (GitLab's large_blob_download rate limit; counted by each process), then 429;
    # blame refuses it with 413; diffs show it `too_large` without reading it; languages
    # leave it out.
    large_blob_bytes: int = 10 * 1024 * 1024
    large_blob_downloads_per_minute: int = 5
    # Actions one commit of the commits API may carry (GitLab sets none; its request size
    # bounds them): more is refused with 400 before anything is written. An action costs
    # about 60 µs, or 2 ms with a last_commit_id (a `git log` of its path, as GitLab asks
    # Gitaly once per action), while the repository's write lock is held.
    max_commit_actions: int = 20_000
    # Entries one walk of a whole tree visits at most (a recursive listing, languages). A
    # pushed tree may hold the same subtree twice at each of 40 levels: 2^40 paths in a few
    # KiB that pass every push rule. GitLab sets no such bound (Gitaly's calls end at their
    # deadline); this one is above the largest repositories known (a few million files).
    # Past it a listing is its first max_tree_entries entries and languages are the shares
    # of the files counted.
    max_tree_entries: int = 5_000_000
    # Rate limits (the throttle_* instance settings): user ids never throttled, comma-separated
    # (GitLab's GITLAB_THROTTLE_USER_ALLOWLIST); and a header that, set to 1, lets a request
    # past every throttle (GITLAB_THROTTLE_BYPASS_HEADER; only for a proxy that strips it from
    # its clients' requests). Empty: none.
    throttle_user_allowlist: str = ""
    throttle_bypass_header: str = ""

    @field_validator("external_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("monitoring_whitelist")
    @classmethod
    def _valid_networks(cls, value: str) -> str:
        _networks(value)  # a bad entry fails here, when kiln starts
        return value

    @property
    def sqlalchemy_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'kiln.db').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.sqlalchemy_url.startswith("sqlite")

    @property
    def pool_limits(self) -> tuple[int, int]:
        """(pool size, overflow): the connections one process may hold at once is their sum."""
        size, overflow = (8, 16) if self.is_sqlite else (20, 10)
        if self.db_pool_size is not None:
            size = self.db_pool_size
        if self.db_max_overflow is not None:
            overflow = self.db_max_overflow
        return size, overflow

    @property
    def monitoring_networks(self) -> tuple[IPv4Network | IPv6Network, ...]:
        """monitoring_whitelist, parsed."""
        return _networks(self.monitoring_whitelist)

    @property
    def read_loop_count(self) -> int:
        if self.read_threads is not None:
            return max(0, self.read_threads)
        return 0 if self.is_sqlite else 8

    @property
    def db_request_limit(self) -> int:
        """Requests one HTTP process admits to the database at once: never more than its pool
        serves alongside its job workers, so no request ever waits for a connection."""
        size, overflow = self.pool_limits
        room = size + overflow - self.workers
        if self.max_db_requests > 0:
            return max(1, min(self.max_db_requests, room))
        return max(1, room - 2)

    def ensure_dirs(self) -> None:
        for sub in ("", "repositories", "uploads", "packages", "artifacts", "exports"):
            (self.data_dir / sub).mkdir(parents=True, exist_ok=True)


def load_settings(**overrides: object) -> Settings:
    return Settings(**overrides)  # type: ignore[arg-type]


@cache
def _networks(entries: str) -> tuple[IPv4Network | IPv6Network, ...]:
    return tuple(ip_network(entry.strip(), strict=False) for entry in entries.split(",") if entry.strip())
