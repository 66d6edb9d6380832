"""Application settings (administrators only): GitLab's attributes with their types, defaults
and ranges, `requires` rules, deprecated names, and a refused change that changes nothing."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from sqlalchemy import func, select

from kiln.models import ApplicationSetting, Term
from kiln.services import instance_settings
from tests.bodies import FORBIDDEN, UNAUTHORIZED
from tests.statements import recording, statements

PATH = "/application/settings"


def stored(db) -> dict:
    db.expire_all()
    return db.scalars(select(ApplicationSetting.values).order_by(ApplicationSetting.id)).first() or {}


def terms_versions(db) -> list[str]:
    db.expire_all()
    return list(db.scalars(select(Term.terms).order_by(Term.id)))


# ----------------------------------------------------------------------------- who may


def test_anonymous_is_401(api):
    assert (api().get(PATH).status_code, api().get(PATH).json()) == (401, UNAUTHORIZED)
    assert api().put(PATH, json={"signup_enabled": False}).status_code == 401


def test_non_admin_is_403_and_nothing_is_stored(api, make, db):
    user = make.user()
    assert (api(user).get(PATH).status_code, api(user).get(PATH).json()) == (403, FORBIDDEN)
    r = api(user).put(PATH, json={"signup_enabled": False, "terms": "Be nice"})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert "signup_enabled" not in stored(db)
    assert terms_versions(db) == []


def test_non_admin_with_bad_values_is_still_403(api, make, db):
    r = api(make.user()).put(PATH, json={"max_attachment_size": "lots"})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert "max_attachment_size" not in stored(db)


# ----------------------------------------------------------------------------- reading


def test_get_answers_every_spec_attribute_with_its_default(api):
    r = api("root").get(PATH)
    assert r.status_code == 200
    body = r.json()
    assert isinstance(body["id"], int)
    assert body["created_at"].endswith("Z")
    assert body["updated_at"].endswith("Z")
    expected = {
        "default_projects_limit": 100000,
        "signup_enabled": True,
        "default_branch_protection": 2,
        "default_project_visibility": "private",
        "default_group_visibility": "private",
        "default_snippet_visibility": "private",
        "restricted_visibility_levels": [],
        "max_attachment_size": 100,
        "session_expire_delay": 10080,
        "domain_whitelist": None,
        "domain_blacklist_enabled": False,
        "domain_blacklist": [],
        "first_day_of_week": 0,
        "enforce_terms": False,
        "terms": None,
        "external_authorization_service_timeout": 0.5,
        "polling_interval_multiplier": 1.0,
        "container_registry_token_expire_delay": 5,
        "repository_storages": ["default"],
        "diagramtool_enabled": False,
        "diagramtool_url": None,
        "avatarsvc_enabled": True,
        "hashed_storage_enabled": True,
        "rsa_key_restriction": 0,
        "allow_local_requests_from_web_hooks_and_services": False,
        "allow_local_requests_from_hooks_and_services": False,
        "allow_local_requests_from_system_hooks": True,
        "deletion_adjourned_period": 0,
        "npm_package_requests_forwarding": True,
        "local_markdown_version": 0,
        "user_show_add_ssh_key_message": True,
        "instance_statistics_visibility_private": False,
        "performance_bar_allowed_group_id": None,
    }
    assert {k: body[k] for k in expected} == expected
    spec_names = [
        "admin_notification_email",
        "after_sign_out_path",
        "after_sign_up_text",
        "spamfilter_enabled",
        "spamfilter_api_key",
        "allow_group_owners_to_manage_ldap",
        "archive_builds_in_human_readable",
        "asset_proxy_enabled",
        "asset_proxy_url",
        "asset_proxy_whitelist",
        "authorized_keys_enabled",
        "auto_devops_domain",
        "auto_devops_enabled",
        "check_namespace_plan",
        "commit_email_hostname",
        "default_artifacts_expire_in",
        "default_ci_config_path",
        "default_project_creation",
        "diff_max_patch_bytes",
        "disabled_oauth_sign_in_sources",
        "dns_rebinding_protection_enabled",
        "dsa_key_restriction",
        "ecdsa_key_restriction",
        "ed25519_key_restriction",
        "cloudcluster_integration_enabled",
        "cloudcluster_account_id",
        "cloudcluster_access_key_id",
        "fulltext_aws",
        "fulltext_aws_region",
        "fulltext_aws_access_key",
        "fulltext_aws_secret_access_key",
        "fulltext_indexing",
        "fulltext_limit_indexing",
        "fulltext_search",
        "fulltext_namespace_ids",
        "fulltext_project_ids",
        "fulltext_url",
        "email_additional_text",
        "email_author_in_body",
        "enabled_git_access_protocol",
        "external_auth_client_cert",
        "external_auth_client_key",
        "external_auth_client_key_pass",
        "external_authorization_service_enabled",
        "external_authorization_service_default_label",
        "external_authorization_service_url",
        "file_template_project_id",
        "geo_node_allowed_ips",
        "geo_status_timeout",
        "repostore_timeout_default",
        "repostore_timeout_fast",
        "repostore_timeout_medium",
        "dashboard_enabled",
        "dashboard_url",
        "password_authentication_enabled_for_web",
        "sign_in_text",
        "home_page_url",
        "user_oauth_applications",
        "outbound_local_requests_whitelist",
        "terminal_max_session_time",
        "container_expiration_policies_enable_historic_entries",
    ]
    assert [n for n in spec_names if n not in body] == []


def test_secrets_gitlab_never_shows_are_not_answered(api):
    r = api("root").put(
        PATH,
        json={
            "asset_proxy_enabled": True,
            "asset_proxy_url": "https://assets.example.com",
            "asset_proxy_secret_key": "s3cret",
            "cloudcluster_secret_access_key": "aws-secret",
            "spamfilter_api_key": "spam-key",
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert "asset_proxy_secret_key" not in body
    assert "cloudcluster_secret_access_key" not in body
    # Other secrets are answered to administrators as stored, as GitLab does.
    assert body["spamfilter_api_key"] == "spam-key"
    assert api("root").get(PATH).json()["asset_proxy_url"] == "https://assets.example.com"


# ----------------------------------------------------------------------------- changing


@pytest.mark.parametrize("how", ["json", "data", "query"])
def test_update_from_json_form_or_query_string(api, db, how):
    values = {
        "signup_enabled": "false",
        "default_project_visibility": "internal",
        "max_attachment_size": "25",
    }
    if how == "query":
        r = api("root").put(f"{PATH}?{urlencode(values)}")
    elif how == "json":
        r = api("root").put(
            PATH,
            json={
                "signup_enabled": False,
                "default_project_visibility": "internal",
                "max_attachment_size": 25,
            },
        )
    else:
        r = api("root").put(PATH, data=values)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["signup_enabled"], body["default_project_visibility"], body["max_attachment_size"]) == (
        False,
        "internal",
        25,
    )
    assert instance_settings.current(db)["max_attachment_size"] == 25


def test_booleans_as_python_gitlab_sends_them(api):
    r = api("root").put(f"{PATH}?user_oauth_applications=False&email_author_in_body=True")
    assert r.status_code == 200
    assert (r.json()["user_oauth_applications"], r.json()["email_author_in_body"]) == (False, True)


def test_unknown_attributes_are_ignored(api, db):
    r = api("root").put(PATH, json={"no_such_setting": 1, "signup_enabled": False})
    assert r.status_code == 200
    assert "no_such_setting" not in r.json()
    assert "no_such_setting" not in stored(db)
    assert r.json()["signup_enabled"] is False


def test_put_answers_id_and_times(api):
    body = api("root").put(PATH, json={"sign_in_text": "Welcome"}).json()
    assert body["sign_in_text"] == "Welcome"
    assert isinstance(body["id"], int)
    assert body["created_at"]
    assert body["updated_at"]


def test_arrays_as_comma_separated_strings_or_lists(api):
    r = api("root").put(PATH, data={"disabled_oauth_sign_in_sources": "github,bitbucket"})
    assert r.json()["disabled_oauth_sign_in_sources"] == ["github", "bitbucket"]
    r = api("root").put(PATH, json={"outbound_local_requests_whitelist": ["10.0.0.1", "hooks.local"]})
    assert r.json()["outbound_local_requests_whitelist"] == ["10.0.0.1", "hooks.local"]
    r = api("root").put(f"{PATH}?fulltext_project_ids[]=3&fulltext_project_ids[]=5")
    assert r.json()["fulltext_project_ids"] == [3, 5]


def test_visibility_levels_as_names_or_numbers(api):
    r = api("root").put(PATH, json={"default_snippet_visibility": 20, "restricted_visibility_levels": [20]})
    assert r.status_code == 200, r.text
    assert (r.json()["default_snippet_visibility"], r.json()["restricted_visibility_levels"]) == (
        "public",
        ["public"],
    )


# ----------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("default_projects_limit", "many"),
        ("max_attachment_size", 2.5),
        ("signup_enabled", "perhaps"),
        ("external_authorization_service_timeout", "soon"),
        ("sign_in_text", {"a": 1}),
        ("fulltext_namespace_ids", ["x"]),
        ("kroki_formats", "bpmn"),
    ],
)
def test_wrong_type_is_400_invalid(api, db, name, value):
    r = api("root").put(PATH, json={name: value})
    assert (r.status_code, r.json()) == (400, {"error": f"{name} is invalid"})
    assert name not in stored(db)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("default_branch_protection", 7),
        ("default_project_visibility", "secret"),
        ("first_day_of_week", 3),
        ("enabled_git_access_protocol", "ftp"),
        ("default_project_creation", 9),
        ("whats_new_variant", "some"),
    ],
)
def test_value_outside_its_choices_is_400(api, db, name, value):
    r = api("root").put(PATH, json={name: value})
    assert (r.status_code, r.json()) == (400, {"error": f"{name} does not have a valid value"})
    assert name not in stored(db)


def test_git_access_protocol_nil_allows_both(api):
    assert (
        api("root")
        .put(PATH, json={"enabled_git_access_protocol": "ssh"})
        .json()["enabled_git_access_protocol"]
        == "ssh"
    )
    r = api("root").put(PATH, json={"enabled_git_access_protocol": "nil"})
    assert r.json()["enabled_git_access_protocol"] is None


# ----------------------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("max_attachment_size", 0, "must be greater than 0"),
        ("session_expire_delay", -5, "must be greater than 0"),
        ("default_projects_limit", -1, "must be greater than or equal to 0"),
        ("deletion_adjourned_period", 91, "must be less than or equal to 90"),
        ("diff_max_patch_bytes", 1024, "must be greater than or equal to 204800"),
        ("diff_max_files", 5000, "must be less than or equal to 3000"),
        ("external_authorization_service_timeout", 11, "must be less than or equal to 10"),
        ("local_markdown_version", 70000, "must be less than 65536"),
        ("minimum_password_length", 4, "must be greater than or equal to 8"),
        ("throttle_authenticated_api_period_in_seconds", 0, "must be greater than 0"),
        (
            "rsa_key_restriction",
            1000,
            "must be forbidden, allowed, or one of these sizes: 1024, 2048, 3072, 4096",
        ),
        ("archive_builds_in_human_readable", "2 hours", "must be at least 1 day"),
        ("default_ci_config_path", "../ci.yml", "cannot include leading slash or directory traversal."),
        ("rate_limiting_response_text", "x" * 256, "is too long (maximum is 255 characters)"),
    ],
)
def test_out_of_range_is_400_naming_the_attribute(api, name, value, message):
    r = api("root").put(PATH, json={name: value})
    assert r.status_code == 400, r.text
    assert r.json() == {"message": {name: [message]}}


def test_in_range_values_are_kept(api):
    r = api("root").put(
        PATH,
        json={
            "deletion_adjourned_period": 7,
            "ed25519_key_restriction": -1,
            "rsa_key_restriction": 2048,
            "archive_builds_in_human_readable": "15 days",
            "polling_interval_multiplier": 2.5,
            "diff_max_files": 2000,
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (
        body["deletion_adjourned_period"],
        body["ed25519_key_restriction"],
        body["rsa_key_restriction"],
    ) == (7, -1, 2048)
    assert (
        body["archive_builds_in_human_readable"],
        body["polling_interval_multiplier"],
        body["diff_max_files"],
    ) == (
        "15 days",
        2.5,
        2000,
    )


def test_default_visibility_cannot_be_restricted(api):
    r = api("root").put(PATH, json={"restricted_visibility_levels": ["private"]})
    assert r.status_code == 400
    assert r.json() == {
        "message": {
            "default_project_visibility": ["cannot be set to a restricted visibility level"],
            "default_group_visibility": ["cannot be set to a restricted visibility level"],
        }
    }


def test_unknown_restricted_level_is_400(api):
    r = api("root").put(PATH, json={"restricted_visibility_levels": ["hidden"]})
    assert r.json() == {
        "message": {"restricted_visibility_levels": ["'hidden' is not a valid visibility level"]}
    }


# ----------------------------------------------------------------------------- requires


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"enforce_terms": True}, "terms is missing"),
        ({"domain_blacklist_enabled": True}, "domain_blacklist is missing"),
        ({"domain_denylist_enabled": True}, "domain_denylist is missing"),
        ({"spamfilter_enabled": True}, "spamfilter_api_key is missing"),
        ({"asset_proxy_enabled": True}, "asset_proxy_url is missing"),
        ({"diagramtool_enabled": True}, "diagramtool_url is missing"),
        ({"external_auth_client_cert": "PEM"}, "external_auth_client_key is missing"),
        (
            {
                "external_authorization_service_enabled": True,
                "external_authorization_service_url": "https://auth",
            },
            "external_authorization_service_default_label is missing, external_authorization_service_timeout is missing",
        ),
        (
            {"throttle_authenticated_api_enabled": True},
            "throttle_authenticated_api_requests_per_period is missing, throttle_authenticated_api_period_in_seconds is missing",
        ),
    ],
)
def test_a_setting_turned_on_requires_the_ones_it_needs(api, db, body, error):
    r = api("root").put(PATH, json=body)
    assert (r.status_code, r.json()) == (400, {"error": error})
    assert not set(body) & set(stored(db))


def test_requires_is_satisfied_by_sending_both(api):
    r = api("root").put(
        PATH, json={"diagramtool_enabled": True, "diagramtool_url": "https://diagrams.example.com"}
    )
    assert r.status_code == 200, r.text
    assert (r.json()["diagramtool_enabled"], r.json()["diagramtool_url"]) == (
        True,
        "https://diagrams.example.com",
    )


def test_turning_a_setting_off_needs_nothing_else(api, db):
    r = api("root").put(PATH, json={"enforce_terms": False})
    assert (r.status_code, r.json()["enforce_terms"]) == (200, False)
    instance_settings.update(db, {"diagramtool_enabled": True, "diagramtool_url": "https://d.example.com"})
    r = api("root").put(PATH, json={"diagramtool_enabled": False})
    assert (r.status_code, r.json()["diagramtool_enabled"]) == (200, False)
    assert stored(db)["diagramtool_enabled"] is False


def test_present_when_enabled_is_checked_on_the_stored_values_too(api):
    r = api("root").put(PATH, json={"diagramtool_enabled": True, "diagramtool_url": ""})
    assert r.status_code == 400
    assert r.json() == {"message": {"diagramtool_url": ["can't be blank"]}}


# ----------------------------------------------------------------------------- deprecated names


def test_deprecated_local_requests_alias_sets_the_new_name(api, db):
    r = api("root").put(PATH, json={"allow_local_requests_from_hooks_and_services": True})
    assert r.status_code == 200
    body = r.json()
    assert body["allow_local_requests_from_web_hooks_and_services"] is True
    assert body["allow_local_requests_from_hooks_and_services"] is True
    assert instance_settings.current(db)["allow_local_requests_from_web_hooks_and_services"] is True


@pytest.mark.parametrize(
    ("old", "new"),
    [("domain_whitelist", "domain_allowlist"), ("domain_blacklist", "domain_denylist")],
)
def test_domain_lists_answer_under_both_names(api, db, old, new):
    for sent in (old, new):
        value = [f"{sent}.example.com", "*.corp.example.com"]
        r = api("root").put(PATH, json={sent: value})
        assert r.status_code == 200, r.text
        assert (r.json()[old], r.json()[new]) == (value, value)
        assert instance_settings.current(db)[old] == value


def test_domain_denylist_enabled_with_its_list(api, db):
    r = api("root").put(PATH, json={"domain_denylist_enabled": True, "domain_denylist": "spam.example.com"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["domain_blacklist_enabled"], body["domain_denylist_enabled"]) == (True, True)
    assert body["domain_blacklist"] == ["spam.example.com"]
    settings = instance_settings.current(db)
    assert (settings["domain_blacklist_enabled"], settings["domain_blacklist"]) == (
        True,
        ["spam.example.com"],
    )


def test_enabled_denylist_cannot_be_empty(api):
    r = api("root").put(PATH, json={"domain_denylist_enabled": True, "domain_denylist": []})
    assert r.status_code == 400
    assert r.json() == {
        "message": {"domain_denylist": ["Domain denylist cannot be empty if denylist is enabled."]}
    }


def test_signin_enabled_is_password_authentication_for_web(api, db):
    r = api("root").put(PATH, json={"signin_enabled": False})
    assert (r.json()["password_authentication_enabled_for_web"], r.json()["signin_enabled"]) == (False, False)
    assert instance_settings.current(db)["password_authentication_enabled_for_web"] is False


# ----------------------------------------------------------------------------- nothing partial


def test_one_bad_value_leaves_every_stored_setting_unchanged(api, db):
    assert (
        api("root").put(PATH, json={"sign_in_text": "before", "max_attachment_size": 30}).status_code == 200
    )
    before = stored(db)
    r = api("root").put(
        PATH,
        json={
            "sign_in_text": "after",
            "signup_enabled": False,
            "terms": "New terms",
            "max_attachment_size": 0,
        },
    )
    assert r.status_code == 400
    assert stored(db) == before
    assert terms_versions(db) == []
    settings = instance_settings.current(db)
    assert (settings["sign_in_text"], settings["max_attachment_size"], settings["signup_enabled"]) == (
        "before",
        30,
        True,
    )


def test_a_wrong_type_leaves_every_stored_setting_unchanged(api, db):
    before = stored(db)
    r = api("root").put(PATH, json={"sign_in_text": "after", "default_projects_limit": "lots"})
    assert r.status_code == 400
    assert stored(db) == before


# ----------------------------------------------------------------------------- terms


def test_saving_new_terms_adds_a_version_and_get_answers_the_latest(api, db):
    r = api("root").put(PATH, json={"terms": "Version one"})
    assert r.status_code == 200, r.text
    assert r.json()["terms"] == "Version one"
    api("root").put(PATH, json={"terms": "  Version two\n"})
    assert terms_versions(db) == ["Version one", "Version two"]
    assert api("root").get(PATH).json()["terms"] == "Version two"
    assert instance_settings.current(db)["terms"] == "Version two"


def test_enforcing_terms_with_them(api, db):
    r = api("root").put(PATH, json={"terms": "Be kind", "enforce_terms": True})
    assert r.status_code == 200, r.text
    assert (r.json()["terms"], r.json()["enforce_terms"]) == ("Be kind", True)
    assert terms_versions(db) == ["Be kind"]


def test_the_same_terms_again_add_no_version(api, db):
    api("root").put(PATH, json={"terms": "Same"})
    api("root").put(PATH, json={"terms": "Same"})
    api("root").put(PATH, json={"sign_in_text": "unrelated"})
    assert terms_versions(db) == ["Same"]


def test_enforcing_terms_needs_terms_to_exist(api, db):
    r = api("root").put(PATH, json={"enforce_terms": True, "terms": ""})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"terms": ["You need to set terms to be enforced"]}},
    )
    assert terms_versions(db) == []


def test_update_from_kiln_code_adds_terms_versions(db):
    instance_settings.update(db, {"terms": "From code", "enforce_terms": True})
    assert terms_versions(db) == ["From code"]
    assert instance_settings.current(db)["enforce_terms"] is True


# ----------------------------------------------------------------------------- internal API


def test_every_setting_default_is_kept_for_its_readers(db):
    settings = instance_settings.current(db)
    for name, value in instance_settings.DEFAULTS.items():
        assert settings[name] == value
    with pytest.raises(KeyError):
        instance_settings.update(db, {"no_such_setting": 1})


def test_current_reuses_its_view_while_the_database_is_unchanged(db, runtime):
    first = instance_settings.current(db)
    with recording(runtime.engine) as seen:
        again = instance_settings.current(db)
    assert again is first
    assert [s for s in seen if s.lstrip().upper().startswith("SELECT")] == []
    instance_settings.update(db, {"max_attachment_size": 12})
    changed = instance_settings.current(db)
    assert changed is not first
    assert changed["max_attachment_size"] == 12


def test_get_costs_a_fixed_number_of_statements(api, runtime):
    seen = statements(runtime, lambda: api("root").get(PATH))
    # The token with its user, and the settings with the latest terms.
    assert len(seen) == 2, seen


def test_settings_row_is_made_once(api, db):
    api("root").get(PATH)
    api("root").get(PATH)
    assert db.scalar(select(func.count()).select_from(ApplicationSetting)) == 1


def test_performance_bar_group_is_named_by_path(api, make):
    group = make.group(path="perf-team")
    r = api("root").put(PATH, json={"performance_bar_allowed_group_path": "Perf-Team"})
    assert r.json()["performance_bar_allowed_group_id"] == group.id
    r = api("root").put(PATH, json={"performance_bar_enabled": False})
    assert r.json()["performance_bar_allowed_group_id"] is None
    assert "performance_bar_allowed_group_path" not in r.json()


def test_blank_default_branch_name_goes_back_to_the_default(api, db):
    assert (
        api("root").put(PATH, json={"default_branch_name": "trunk"}).json()["default_branch_name"] == "trunk"
    )
    r = api("root").put(PATH, json={"default_branch_name": ""})
    assert r.json()["default_branch_name"] == "main"
    assert instance_settings.current(db)["default_branch_name"] == "main"


def test_branch_protection_defaults_follow_the_level(api):
    body = api("root").put(PATH, json={"default_branch_protection": 1}).json()
    assert body["default_branch_protection_defaults"] == {
        "allowed_to_push": [{"access_level": 30}],
        "allow_force_push": False,
        "allowed_to_merge": [{"access_level": 40}],
        "developer_can_initial_push": False,
    }


def test_kroki_formats_not_named_stay_as_they_were(api):
    api("root").put(PATH, json={"kroki_formats": {"bpmn": True}})
    r = api("root").put(PATH, json={"kroki_formats": {"excalidraw": True}})
    assert r.json()["kroki_formats"] == {"blockdiag": False, "bpmn": True, "excalidraw": True}
    r = api("root").put(PATH, json={"kroki_formats": {"plantuml": True}})
    assert (r.status_code, r.json()) == (400, {"message": {"kroki_formats": ["must be a valid json schema"]}})
