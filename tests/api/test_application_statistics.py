"""Application statistics (administrators only): GitLab's counts, as strings with thousands
separators, counted in a fixed number of statements."""

from __future__ import annotations

import pytest

from kiln.db import transaction
from kiln.entities.application_statistics import application_statistics
from kiln.models import CommitNote, SSHKey
from kiln.queries.application_statistics import Counts
from tests.bodies import FORBIDDEN, UNAUTHORIZED
from tests.statements import statements

PATH = "/application/statistics"
FIELDS = [
    "forks",
    "issues",
    "merge_requests",
    "notes",
    "snippets",
    "ssh_keys",
    "milestones",
    "users",
    "groups",
    "projects",
    "active_users",
]


def numbers(api) -> dict[str, int]:
    r = api("root").get(PATH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == FIELDS
    assert all(isinstance(v, str) for v in body.values())
    return {k: int(v.replace(",", "")) for k, v in body.items()}


def test_anonymous_is_401_and_non_admin_403(api, make):
    assert (api().get(PATH).status_code, api().get(PATH).json()) == (401, UNAUTHORIZED)
    r = api(make.user()).get(PATH)
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_counts_what_the_instance_holds(api, make, db):
    before = numbers(api)
    owner = make.user()
    make.user(state="blocked")
    group = make.group(owners=[owner])
    source = make.project(owner=owner)
    make.project(namespace=group, forked_from_id=source.id)
    with transaction(db):
        db.add(
            SSHKey(
                user_id=owner.id, title="k", key="ssh-ed25519 AAAA c", fingerprint="f", fingerprint_sha256="s"
            )
        )
        db.add(CommitNote(project_id=source.id, commit_sha="a" * 40, author_id=owner.id, note="Nice"))
    repo = make.project_with_repository(owner=owner)
    issue = make.issue(repo, owner)
    make.note(issue, owner)
    make.merge_request(repo, owner)
    make.milestone(project=repo)
    after = numbers(api)
    delta = {k: after[k] - before[k] for k in FIELDS}
    assert delta == {
        "forks": 1,
        "issues": 1,
        "merge_requests": 1,
        "notes": 2,
        "snippets": 0,
        "ssh_keys": 1,
        "milestones": 1,
        "users": 2,
        "groups": 1,
        "projects": 3,
        "active_users": 1,
    }


@pytest.mark.parametrize(("count", "text"), [(0, "0"), (999, "999"), (1234, "1,234"), (1234567, "1,234,567")])
def test_counts_are_strings_with_thousands_separators(count, text):
    view = application_statistics(Counts(*(count,) * 10))
    assert view["users"] == view["issues"] == view["merge_requests"] == text
    assert view["snippets"] == "0"


def test_costs_a_fixed_number_of_statements(api, make, runtime):
    root = api("root")
    root.get(PATH)  # the token's use is recorded
    make.project()  # and the counts change after it
    seen = statements(runtime, lambda: root.get(PATH), warm_up=0)
    # The token with its user, and every count.
    assert len(seen) == 2, seen
