"""python-gitlab, as published, reading and changing the application settings and reading the
application statistics on a running `kiln serve`."""

from __future__ import annotations

import pytest
from gitlab.exceptions import GitlabGetError, GitlabUpdateError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


def test_settings_read_change_and_read_back(root, base_url, unique):
    settings = root.settings.get()
    assert settings.default_projects_limit == 100000
    assert settings.default_branch_protection in (0, 1, 2, 3, 4)
    was = (settings.sign_in_text, settings.first_day_of_week, settings.disabled_oauth_sign_in_sources)
    text = unique("welcome")
    try:
        settings.sign_in_text = text
        settings.first_day_of_week = 1
        settings.disabled_oauth_sign_in_sources = ["github", "bitbucket"]
        settings.save()
        assert (settings.sign_in_text, settings.first_day_of_week) == (text, 1)

        again = root.settings.get()
        assert (again.sign_in_text, again.first_day_of_week) == (text, 1)
        assert again.disabled_oauth_sign_in_sources == ["github", "bitbucket"]

        root.settings.update(new_data={"allow_local_requests_from_hooks_and_services": False})
        assert root.settings.get().allow_local_requests_from_web_hooks_and_services is False

        again.first_day_of_week = 3  # Sunday, Monday or Saturday only
        with pytest.raises(GitlabUpdateError) as err:
            again.save()
        assert err.value.response_code == 400
        assert root.settings.get().first_day_of_week == 1
    finally:
        root.settings.update(
            new_data={
                "sign_in_text": was[0] or "",
                "first_day_of_week": was[1],
                "disabled_oauth_sign_in_sources": ",".join(was[2]),
            }
        )


def test_statistics(root, base_url, unique):
    owner = create_user(root, unique("counted"))
    gl = client_of(base_url, token_for(root, owner))
    gl.projects.create({"name": unique("counted")})
    stats = root.statistics.get()
    assert int(stats.users.replace(",", "")) >= 2
    assert int(stats.projects.replace(",", "")) >= 1
    # Counts as GitLab writes them: digits with thousands separators.
    assert stats.issues.replace(",", "").isdigit()
    assert stats.merge_requests.replace(",", "").isdigit()
    with pytest.raises(GitlabGetError) as err:
        gl.statistics.get()
    assert err.value.response_code == 403


def test_plan_limits_through_the_client(root):
    limits = root.http_get("/application/plan_limits")
    assert limits["ci_pipeline_schedules"] == 10
    was = limits["ci_pipeline_size"]
    try:
        changed = root.http_put(
            "/application/plan_limits", query_data={"plan_name": "default", "ci_pipeline_size": 50}
        )
        assert changed["ci_pipeline_size"] == 50
        assert root.http_get("/application/plan_limits")["ci_pipeline_size"] == 50
    finally:
        root.http_put(
            "/application/plan_limits", query_data={"plan_name": "default", "ci_pipeline_size": was}
        )
