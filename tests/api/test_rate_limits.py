"""Rate limits per user and per IP address (GitLab's "User and IP rate limits"): each
throttle of the instance settings counts its kind of request in fixed windows of its period
and answers 429, with Retry-After and GitLab's RateLimit-* headers, past its limit."""

from __future__ import annotations

import base64
import email.utils
import math
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from litestar.testing import TestClient
from sqlalchemy import select, update

from kiln import changes, migrate, rate_limits
from kiln.api import _asgi
from kiln.models import ApplicationSetting
from kiln.services import instance_settings
from tests.conftest import EXTERNAL_URL, ROOT_TOKEN
from tests.repositories import new_project
from tests.statements import count, statements

# A moment in the middle of a window of every period used here.
NOW = 1_800_000_030


class Clock:
    """The time the throttles see (their windows), moved by the tests."""

    def __init__(self) -> None:
        self.now = float(NOW)

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return time.monotonic()


@pytest.fixture
def limiter(app: Any, runtime: Any, db: Any) -> Iterator[rate_limits.Limiter]:
    """The app's throttles with an empty store (counts from earlier tests are gone)."""
    found = app.inner.limiter(runtime)
    found.store.clear()
    yield found
    found.store.clear()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch, limiter: rate_limits.Limiter) -> Clock:
    moved = Clock()
    monkeypatch.setattr(rate_limits, "time", moved)
    return moved


@pytest.fixture
def throttle(db: Any) -> Callable[..., None]:
    """Switch a throttle on with a limit and a period (or change any setting)."""

    def apply(name: str | None = None, limit: int = 2, period: int = 3600, **more: Any) -> None:
        values = dict(more)
        if name is not None:
            values |= {
                f"{name}_enabled": True,
                f"{name}_requests_per_period": limit,
                f"{name}_period_in_seconds": period,
            }
        instance_settings.update(db, values)

    return apply


class FromAddress:
    """The app as reached from the address a request names in X-Test-Remote-Addr."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            found = dict(scope["headers"]).get(b"x-test-remote-addr", b"127.0.0.1").decode()
            scope = {**scope, "client": (found, 40000)}
        await self.app(scope, receive, send)


@pytest.fixture
def remote(app: Any, client: Any) -> Callable[..., Any]:
    """A GET under /api/v4 from an address, with optional headers."""
    via = TestClient(FromAddress(app), base_url=EXTERNAL_URL)

    def get(path: str, address: str = "127.0.0.1", **headers: str) -> Any:
        return via.get(f"/api/v4{path}", headers={"X-Test-Remote-Addr": address, **headers})

    return get


def statuses(call: Callable[[], Any], n: int) -> list[int]:
    return [call().status_code for _ in range(n)]


def test_with_every_throttle_off_nothing_is_counted(api, limiter, runtime):
    root = api("root")
    assert statements(runtime, lambda: root.get("/user"), fresh=False, warm_up=3) == []
    assert limiter.store.size() == 0


def test_authenticated_api_refuses_the_request_past_the_limit(api, make, throttle, clock):
    user = make.user()
    throttle("throttle_authenticated_api", limit=3)
    assert statuses(lambda: api(user).get("/user"), 3) == [200, 200, 200]
    assert api(user).get("/user").status_code == 429
    assert api(user).get("/projects").status_code == 429


def test_authenticated_api_counts_per_user(api, make, throttle, clock):
    ann, bob = make.user(), make.user()
    throttle("throttle_authenticated_api", limit=2)
    assert statuses(lambda: api(ann).get("/user"), 3) == [200, 200, 429]
    assert statuses(lambda: api(bob).get("/user"), 2) == [200, 200]


def test_administrators_are_limited_like_anyone(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1)
    assert statuses(lambda: api("root").get("/user"), 2) == [200, 429]


def test_authenticated_api_leaves_anonymous_requests_alone(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1)
    assert statuses(lambda: api().get("/projects"), 3) == [200, 200, 200]


def test_under_the_limit_nothing_is_refused(api, make, throttle, clock):
    user = make.user()
    throttle("throttle_authenticated_api", limit=20)
    assert set(statuses(lambda: api(user).get("/user"), 20)) == {200}


def test_the_count_starts_again_in_the_next_window(api, make, throttle, clock):
    user = make.user()
    throttle("throttle_authenticated_api", limit=2, period=60)
    assert statuses(lambda: api(user).get("/user"), 3) == [200, 200, 429]
    clock.now = (NOW // 60 + 1) * 60  # the next window's first second
    assert statuses(lambda: api(user).get("/user"), 3) == [200, 200, 429]


def test_the_period_is_the_windows_length(api, make, throttle, clock):
    user = make.user()
    throttle("throttle_authenticated_api", limit=1, period=3600)
    assert statuses(lambda: api(user).get("/user"), 2) == [200, 429]
    clock.now = (NOW // 3600) * 3600 + 3599  # still the same hour
    assert api(user).get("/user").status_code == 429
    clock.now += 1
    assert api(user).get("/user").status_code == 200


def test_unauthenticated_api_counts_per_address(remote, throttle, clock):
    throttle("throttle_unauthenticated_api", limit=2)
    assert statuses(lambda: remote("/projects", "10.0.0.1"), 3) == [200, 200, 429]
    assert statuses(lambda: remote("/projects", "10.0.0.2"), 2) == [200, 200]


def test_an_invalid_token_counts_as_unauthenticated_by_address(remote, throttle, clock):
    throttle("throttle_unauthenticated_api", limit=2)
    assert remote("/projects", "10.0.0.3").status_code == 200
    assert remote("/user", "10.0.0.3", **{"Private-Token": "not-a-token"}).status_code == 401
    refused = remote("/user", "10.0.0.3", **{"Private-Token": "not-a-token"})
    assert refused.status_code == 429
    assert refused.headers["RateLimit-Name"] == "throttle_unauthenticated_api"


@pytest.mark.parametrize("authorization", [b"Basic \xe9\xe9\xe9\xe9", b"Basic not*base64"])
def test_basic_credentials_that_do_not_decode_count_by_address(remote, throttle, clock, authorization):
    throttle("throttle_unauthenticated_api", limit=2)
    sent = {"Authorization": authorization}
    assert statuses(lambda: remote("/projects", "10.0.0.4", **sent), 3) == [200, 200, 429]


def test_a_caller_lookup_that_fails_counts_by_address(remote, throttle, clock, monkeypatch, caplog):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the caller lookup broke")

    monkeypatch.setattr(_asgi, "caller", broken)
    throttle("throttle_unauthenticated_api", limit=2)
    got = [remote(f"/projects?page={n}", "10.0.0.5", **{"Private-Token": ROOT_TOKEN}) for n in (1, 2, 3)]
    assert [r.status_code for r in got] == [200, 200, 429]
    assert got[2].headers["RateLimit-Name"] == "throttle_unauthenticated_api"
    # Logged, with its traceback, once for the one cause.
    logged = [r for r in caplog.records if "counted by address" in r.getMessage() and r.exc_info]
    assert len(logged) == 1


def test_unauthenticated_api_leaves_authenticated_callers_alone(api, throttle, clock):
    throttle("throttle_unauthenticated_api", limit=1)
    assert statuses(lambda: api("root").get("/user"), 3) == [200, 200, 200]


def test_the_refusal_is_gitlabs_429(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=2, period=60)
    for _ in range(2):
        api("root").get("/user")
    refused = api("root").get("/user")
    retry_after = 60 - NOW % 60
    reset = NOW + retry_after
    assert refused.status_code == 429
    assert refused.content == b"Retry later\n"
    assert refused.headers["Content-Type"] == "text/plain"
    assert {k: v for k, v in refused.headers.items() if k.startswith("ratelimit-") or k == "retry-after"} == {
        "ratelimit-name": "throttle_authenticated_api",
        "ratelimit-limit": "2",
        "ratelimit-observed": "3",
        "ratelimit-remaining": "0",
        "ratelimit-reset": str(reset),
        "ratelimit-resettime": email.utils.formatdate(reset, usegmt=True),
        "retry-after": str(retry_after),
    }


def test_the_limit_header_is_per_minute_whatever_the_period(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1000, period=3600)
    throttle(throttle_authenticated_api_requests_per_period=1)
    api("root").get("/user")
    refused = api("root").get("/user")
    assert refused.headers["RateLimit-Limit"] == str(math.ceil(1 * 60 / 3600))
    assert refused.headers["Retry-After"] == str(3600 - NOW % 3600)


def test_every_refusal_in_the_window_is_observed(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1)
    observed = [api("root").get("/user").headers.get("RateLimit-Observed") for _ in range(4)]
    assert observed == [None, "2", "3", "4"]


def test_the_response_text_is_the_settings(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1, rate_limiting_response_text="Slow down, please.")
    api("root").get("/user")
    assert api("root").get("/user").content == b"Slow down, please.\n"


def test_a_raised_limit_applies_to_the_next_request(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1)
    assert statuses(lambda: api("root").get("/user"), 2) == [200, 429]
    throttle(throttle_authenticated_api_requests_per_period=5)
    assert api("root").get("/user").status_code == 200


def test_a_throttle_switched_off_applies_to_the_next_request(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1)
    assert statuses(lambda: api("root").get("/user"), 2) == [200, 429]
    throttle(throttle_authenticated_api_enabled=False)
    assert api("root").get("/user").status_code == 200


def test_unauthenticated_web_counts_web_paths_per_address(api, throttle, clock):
    throttle("throttle_unauthenticated", limit=2)
    client = api().client
    assert [client.get("/users/sign_in").status_code != 429 for _ in range(2)] == [True, True]
    refused = client.get("/explore")
    assert refused.status_code == 429
    assert refused.headers["RateLimit-Name"] == "throttle_unauthenticated_web"
    assert api().get("/projects").status_code == 200  # the API is not web traffic


def test_health_checks_are_never_counted(api, throttle, clock):
    throttle("throttle_unauthenticated", limit=1)
    throttle("throttle_authenticated_web", limit=1)
    client = api().client
    assert {client.get("/-/health").status_code for _ in range(3)} == {200}
    assert {client.get("/-/liveness").status_code for _ in range(3)} == {200}


def test_git_over_http_with_a_token_counts_as_authenticated_web(api, make, throttle, clock):
    user = make.user()
    project = new_project(api, make, user)
    throttle("throttle_authenticated_web", limit=2)
    basic = base64.b64encode(f"{user.username}:{user.token}".encode()).decode()
    url = f"/{project['path_with_namespace']}.git/info/refs?service=git-upload-pack"
    client = api().client
    got = [client.get(url, headers={"Authorization": f"Basic {basic}"}) for _ in range(3)]
    assert [r.status_code for r in got] == [200, 200, 429]
    assert got[2].headers["RateLimit-Name"] == "throttle_authenticated_web"
    assert client.get(url).status_code != 429  # anonymous: another count (and another throttle)


def test_protected_paths_count_posts_only(api, throttle, clock):
    throttle("throttle_protected_paths", limit=2, period=60)
    client = api().client
    sign_in = {"username": "nobody", "password": "wrong"}
    first = [client.post("/users/sign_in", data=sign_in).status_code for _ in range(2)]
    assert 429 not in first
    refused = client.post("/users/sign_in", data=sign_in)
    assert refused.status_code == 429
    assert refused.headers["RateLimit-Name"] == "throttle_unauthenticated_protected_paths"
    assert client.get("/users/sign_in").status_code != 429


def test_protected_paths_are_the_settings_list(api, throttle, clock):
    throttle("throttle_protected_paths", limit=1, protected_paths=["/oauth/token"])
    client = api().client
    assert client.post("/users/sign_in", data={"username": "x", "password": "y"}).status_code != 429
    assert client.post("/users/sign_in", data={"username": "x", "password": "y"}).status_code != 429
    client.post("/oauth/token", data={"grant_type": "password"})
    assert client.post("/oauth/token", data={"grant_type": "password"}).status_code == 429


def test_protected_api_paths_count_per_user(api, make, throttle, clock):
    user = make.user()
    throttle("throttle_protected_paths", limit=1, protected_paths=["/api/v4/projects"])
    assert api(user).post("/projects", json={"name": "one"}).status_code == 201
    refused = api(user).post("/projects", json={"name": "two"})
    assert refused.status_code == 429
    assert refused.headers["RateLimit-Name"] == "throttle_authenticated_protected_paths_api"
    assert api(user).get("/projects").status_code == 200


def test_files_api_has_its_own_throttle(api, make, throttle, clock):
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}/repository/files/README.md?ref=main"
    throttle("throttle_authenticated_files_api", limit=2)
    throttle("throttle_authenticated_api", limit=100)
    got = [api(owner).get(path) for _ in range(3)]
    assert [r.status_code for r in got] == [200, 200, 429]
    assert got[2].headers["RateLimit-Name"] == "throttle_authenticated_files_api"
    assert api(owner).get("/user").status_code == 200


def test_without_its_own_throttle_the_files_api_is_api_traffic(api, make, throttle, clock):
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}/repository/files/README.md?ref=main"
    throttle("throttle_authenticated_api", limit=2)
    got = [api(owner).get(path) for _ in range(3)]
    assert [r.status_code for r in got] == [200, 200, 429]
    assert got[2].headers["RateLimit-Name"] == "throttle_authenticated_api"


def test_a_kept_answer_is_counted_too(api, make, throttle, clock):
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}/repository/files/README.md?ref=main"
    throttle("throttle_authenticated_files_api", limit=4)
    # The second answer is kept; the third and fourth are that kept answer.
    assert statuses(lambda: api(owner).get(path), 5) == [200, 200, 200, 200, 429]


def test_unauthenticated_files_api_counts_per_address(api, make, remote, throttle, clock):
    owner = make.user()
    project = new_project(api, make, owner, visibility="public")
    path = f"/projects/{project['id']}/repository/files/README.md?ref=main"
    throttle("throttle_unauthenticated_files_api", limit=1)
    assert statuses(lambda: remote(path, "10.0.1.1"), 2) == [200, 429]
    assert remote(path, "10.0.1.2").status_code == 200


def test_deprecated_api_is_a_group_with_its_projects(api, make, throttle, clock):
    group = make.group()
    throttle("throttle_authenticated_deprecated_api", limit=1)
    assert statuses(lambda: api("root").get(f"/groups/{group.id}"), 2) == [200, 429]
    assert api("root").get(f"/groups/{group.id}?with_projects=false").status_code == 200


def test_only_the_sessions_own_csrf_token_makes_an_api_request_the_frontends(client, make, throttle, clock):
    user = make.user()
    signed_in = client.post(
        "/users/sign_in",
        data={"user[login]": user.username, "user[password]": user.password},
        follow_redirects=False,
    )
    csrf = signed_in.headers["x-csrf-token"]
    throttle("throttle_authenticated_api", limit=2)
    throttle("throttle_authenticated_web", limit=2)
    # Any other value is the API's: counted by the API's throttle.
    forged = [client.get("/api/v4/user", headers={"X-CSRF-Token": "forged"}) for _ in range(3)]
    assert [r.status_code for r in forged] == [200, 200, 429]
    assert forged[2].headers["RateLimit-Name"] == "throttle_authenticated_api"
    # The session's own token: the frontend, counted as web traffic.
    frontend = [client.get("/api/v4/user", headers={"X-CSRF-Token": csrf}) for _ in range(3)]
    assert [r.status_code for r in frontend] == [200, 200, 429]
    assert frontend[2].headers["RateLimit-Name"] == "throttle_authenticated_web"


def test_users_on_the_allowlist_are_never_throttled(api, make, throttle, clock, configure):
    user, other = make.user(), make.user()
    configure(throttle_user_allowlist=f"{user.id}, 999999")
    throttle("throttle_authenticated_api", limit=1)
    assert statuses(lambda: api(user).get("/user"), 3) == [200, 200, 200]
    assert statuses(lambda: api(other).get("/user"), 2) == [200, 429]


def test_the_bypass_header_lets_a_request_past_every_throttle(api, throttle, clock, configure):
    configure(throttle_bypass_header="Gitlab-Bypass-Rate-Limiting")
    throttle("throttle_authenticated_api", limit=1)
    bypass = {"Gitlab-Bypass-Rate-Limiting": "1"}
    assert statuses(lambda: api("root").get("/user", headers=bypass), 3) == [200, 200, 200]
    assert statuses(lambda: api("root").get("/user"), 2) == [200, 429]


def test_sudo_counts_the_tokens_owner(api, make, throttle, clock):
    user = make.user()
    throttle("throttle_authenticated_api", limit=1)
    as_user = api("root").get("/user", headers={"Sudo": str(user.id)})
    assert (as_user.status_code, as_user.json()["username"]) == (200, user.username)
    assert api("root").get("/user").status_code == 429
    assert api(user).get("/user").status_code == 200


def test_a_refused_request_reaches_no_route(api, make, throttle, clock):
    user = make.user()
    throttle("throttle_authenticated_api", limit=1)
    api(user).get("/user")
    assert api(user).post("/projects", json={"name": "never"}).status_code == 429
    assert api("root").get(f"/users/{user.id}/projects").json() == []


@pytest.mark.parametrize("broken", ["sqlite", "postgresql"])
def test_a_store_that_fails_lets_requests_through(
    api, throttle, clock, limiter, tmp_path: Path, caplog, broken: str
):
    # A folder, where no database opens; a server that is not there.
    store = (
        rate_limits.SQLiteStore(tmp_path)
        if broken == "sqlite"
        else rate_limits.PostgresStore("postgresql://kiln@127.0.0.1:1/kiln")
    )
    working = limiter.use(store)
    try:
        throttle("throttle_authenticated_api", limit=1)
        assert statuses(lambda: api("root").get("/user"), 3) == [200, 200, 200]
    finally:
        limiter.use(working)
    assert "counting failed" in caplog.text


def test_a_busy_store_lets_only_that_request_through(
    api, throttle, clock, limiter, tmp_path: Path, monkeypatch, caplog
):
    # Another connection holds the store's write lock past the busy timeout: the requests
    # that meet it go through uncounted, and counting goes on once the lock is released
    # (no back-off switching counting off for everyone).
    monkeypatch.setattr(rate_limits, "SQLITE_BUSY_S", 0.05)
    path = tmp_path / "counts.db"
    store = rate_limits.SQLiteStore(path)
    assert store.size() == 0  # the file and its table
    working = limiter.use(store)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        throttle("throttle_authenticated_api", limit=1)
        holder.execute("BEGIN IMMEDIATE")
        assert statuses(lambda: api("root").get("/user"), 2) == [200, 200]
        holder.execute("ROLLBACK")
        assert statuses(lambda: api("root").get("/user"), 2) == [200, 429]
    finally:
        holder.close()
        limiter.use(working)
        store.close()
    assert "store is busy" in caplog.text
    assert "counting failed" not in caplog.text


def test_busy_and_locked_errors_are_contention_not_a_broken_store():
    assert rate_limits.busy(_locked())
    assert not rate_limits.busy(sqlite3.OperationalError("unable to open database file"))
    assert rate_limits.busy(psycopg.errors.LockNotAvailable("lock timeout"))
    assert rate_limits.busy(psycopg.errors.QueryCanceled("statement timeout"))
    assert not rate_limits.busy(psycopg.OperationalError("connection refused"))


def _locked() -> sqlite3.OperationalError:
    """SQLite's own error for a write lock another connection holds."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "locked.db"
        one = sqlite3.connect(path, isolation_level=None, timeout=0)
        two = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            one.execute("CREATE TABLE t (x)")
            one.execute("BEGIN IMMEDIATE")
            try:
                two.execute("INSERT INTO t VALUES (1)")
            except sqlite3.OperationalError as error:
                return error
            raise AssertionError("not locked")
        finally:
            one.close()
            two.close()


def test_counting_costs_no_statement_of_kilns_database(api, throttle, clock, runtime):
    throttle("throttle_authenticated_api", limit=100)
    root = api("root")
    assert statements(runtime, lambda: root.get("/user"), fresh=False, warm_up=3) == []


def test_the_root_token_is_a_user_like_any(api, throttle, clock):
    throttle("throttle_authenticated_api", limit=1)
    headers = {"Authorization": f"Bearer {ROOT_TOKEN}"}
    assert statuses(lambda: api().get("/user", headers=headers), 2) == [200, 429]


def test_a_write_of_anything_else_leaves_the_settings_as_read(api, make, throttle, clock, limiter, runtime):
    throttle("throttle_authenticated_api", limit=100)
    assert api("root").get("/user").status_code == 200
    clock_of_database = changes.clock_of(runtime.engine)
    assert limiter.fresh(limiter.version(clock_of_database)) is not None
    make.user()
    api(make.user()).post("/projects", json={"name": "written"})
    assert limiter.fresh(limiter.version(clock_of_database)) is not None


def test_a_settings_write_rolled_back_is_read_again(api, db, throttle, clock, limiter, runtime):
    throttle("throttle_authenticated_api", limit=100)
    assert api("root").get("/user").status_code == 200
    clock_of_database = changes.clock_of(runtime.engine)
    stored = db.scalars(select(ApplicationSetting.values)).one()
    savepoint = db.begin_nested()
    db.execute(
        update(ApplicationSetting).values(
            values={**stored, "throttle_authenticated_api_requests_per_period": 1}
        )
    )
    assert limiter.fresh(limiter.version(clock_of_database)) is None
    assert api("root").get("/user").status_code == 429
    savepoint.rollback()
    assert limiter.fresh(limiter.version(clock_of_database)) is None
    assert api("root").get("/user").status_code == 200


def test_a_change_through_the_settings_api_applies_to_the_next_request(api, clock, limiter):
    changed = api("root").put(
        "/application/settings",
        json={
            "throttle_authenticated_api_enabled": True,
            "throttle_authenticated_api_requests_per_period": 2,
            "throttle_authenticated_api_period_in_seconds": 60,
        },
    )
    assert changed.status_code == 200, changed.text
    assert statuses(lambda: api("root").get("/user"), 3) == [200, 200, 429]


def test_the_migrations_leave_the_counters_table_alone(limiter, runtime):
    """On PostgreSQL the counters' table sits in kiln's database, apart from the models."""
    far = 2**31 - 1
    assert limiter.store.hit("a key", far) == 1
    migrate.check(runtime.engine)
    assert limiter.store.hit("a key", far) == 2


def test_counting_adds_no_statement_after_a_write(api, make, throttle, clock, runtime):
    """The caller's lookup for the count is the one the route then reuses."""
    root = api("root")

    def after_a_write() -> int:
        assert root.get("/user").status_code == 200
        make.user()
        return count(runtime, lambda: root.get("/user"), fresh=False, warm_up=0)

    off = after_a_write()
    throttle("throttle_authenticated_api", limit=100)
    assert after_a_write() == off


def test_a_connection_the_server_dropped_ends_and_the_settings_are_read_again(limiter, runtime):
    """The limiter watches the engine's transactions; a connection whose server process went
    away ends its transaction without an error of the limiter's, and what it wrote is gone."""
    from sqlalchemy.exc import OperationalError

    from tests.test_db import terminate_backend

    if runtime.engine.dialect.name != "postgresql":
        pytest.skip("a server process ended under a connection is PostgreSQL's")
    conn = runtime.engine.connect()
    try:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        before = limiter._settings_writes
        terminate_backend(runtime.engine, pid)
        with pytest.raises(OperationalError) as lost:
            conn.exec_driver_sql("SELECT 1")
        assert lost.value.connection_invalidated
        conn.close()  # the transaction's end: no error of the limiter's
        assert limiter._settings_writes != before
    finally:
        conn.close()
        runtime.engine.dispose()
