"""What the authenticated API rate limit costs a request: kiln's `GET /user` and
`GET /projects/:id` again with `throttle_authenticated_api` switched on (a limit no run
reaches), beside the same routes with every throttle off and the bare reference, in the same
run of `python -m bench`.

With the throttle on, each request is also counted: its caller looked up (rows reused while
the database is unchanged) and one upsert in the rate limits' own store (a SQLite file beside
kiln's, or an unlogged table on PostgreSQL). The harness switches the setting in the
database before each target, as an administrator would."""

from __future__ import annotations

from bench.load import Target
from kiln.db import make_engine_unpooled, make_sessionmaker
from kiln.services import instance_settings

# The targets measured with the throttle on, and the routes they repeat.
LIMITED = {"kiln_user_limited": "kiln_user", "kiln_project_limited": "kiln_project"}
REFERENCE = dict.fromkeys(LIMITED, "bare")
# Far above what any run sends in an hour.
LIMIT = 1_000_000_000
PERIOD = 3600

_switched: dict[str, bool] = {}


def targets(kiln_targets: list[Target]) -> list[Target]:
    """The limited twins of kiln_user and kiln_project."""
    by_key = {t.key: t for t in kiln_targets}
    made = []
    for key, base in LIMITED.items():
        found = by_key.get(base)
        if found is not None:
            made.append(Target(key, f"{found.label}, API throttle on", found.url, found.headers))
    return made


def base_key(key: str) -> str:
    """The route a target measures (its answer is checked as that route's)."""
    return LIMITED.get(key, key)


def switch(database_url: str, target: Target) -> None:
    """The throttle on for a limited target, off for every other (written only on a change)."""
    wanted = target.key in LIMITED
    if _switched.get(database_url) == wanted:
        return
    engine = make_engine_unpooled(database_url)
    try:
        with make_sessionmaker(engine)() as db:
            instance_settings.update(
                db,
                {
                    "throttle_authenticated_api_enabled": wanted,
                    "throttle_authenticated_api_requests_per_period": LIMIT,
                    "throttle_authenticated_api_period_in_seconds": PERIOD,
                },
            )
    finally:
        engine.dispose()
    _switched[database_url] = wanted
