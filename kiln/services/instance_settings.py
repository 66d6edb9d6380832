"""Instance settings changed at run time (GitLab's application settings).

One row holds what administrators changed; everything else is the default below. Readers
call `current` once per request and pass the result down: while the database is unchanged it
costs no statement and no parsing (the row is read through queries.reads' reuse, and the view
made of it is kept beside it). The terms of service are versions of their own (models.Term):
saving new `terms` adds one, and the settings show the latest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import JSON, select, type_coerce
from sqlalchemy.orm import Session

from kiln.db import transaction
from kiln.models import ApplicationSetting, Term
from kiln.queries.reads import Rows, reusable, run, utc_iso
from kiln.schemas.application_settings import Kind

DEFAULTS: dict[str, Any] = {
    # Largest upload (project and group attachments), in MB.
    "max_attachment_size": 100,
    # Days a deleted project or group waits before it is removed; 0 removes at once.
    "deletion_adjourned_period": 0,
    "default_project_visibility": "private",
    "default_group_visibility": "private",
    # 0 none, 1 partial, 2 full: applies to new projects' default branch.
    "default_branch_protection": 2,
    # Who may create projects in groups: 0 no one, 1 maintainers, 2 developers + maintainers.
    "default_project_creation": 2,
    "default_projects_limit": 100000,
    "restricted_visibility_levels": [],
    "default_branch_name": "main",
    # Sign-up and sign-in.
    "signup_enabled": True,
    "require_admin_approval_after_user_signup": True,
    "password_authentication_enabled_for_web": True,
    "password_authentication_enabled_for_git": True,
    "can_create_group": True,
    # None: any e-mail domain may sign up.
    "domain_whitelist": None,
    "domain_blacklist_enabled": False,
    "domain_blacklist": [],
    # Minutes a web session lasts.
    "session_expire_delay": 10080,
    "first_day_of_week": 0,
    # "ssh", "http", or None for both.
    "enabled_git_access_protocol": None,
    # Least bits an SSH key of the type may have; 0 any, -1 the type is refused.
    "rsa_key_restriction": 0,
    "dsa_key_restriction": 0,
    "ecdsa_key_restriction": 0,
    "ed25519_key_restriction": 0,
    "ecdsa_sk_key_restriction": 0,
    "ed25519_sk_key_restriction": 0,
    "terms": None,
    "enforce_terms": False,
    "home_page_url": None,
    "after_sign_out_path": None,
    "sign_in_text": None,
    "after_sign_up_text": None,
    "default_ci_config_path": None,
    # Outbound HTTP (hooks, integrations, imports).
    "allow_local_requests_from_web_hooks_and_services": False,
    "allow_local_requests_from_system_hooks": True,
    "outbound_local_requests_whitelist": [],
    "dns_rebinding_protection_enabled": True,
    # What one diff shows at most (kiln.git.diffs says how each bound is applied).
    "diff_max_patch_bytes": 200 * 1024,
    "diff_max_files": 1000,
    "diff_max_lines": 50_000,
    # Rate limits (GitLab's throttle_* settings): requests per period (seconds) per user
    # (authenticated) or per IP address (unauthenticated).
    "throttle_authenticated_api_enabled": False,
    "throttle_authenticated_api_requests_per_period": 7200,
    "throttle_authenticated_api_period_in_seconds": 3600,
    "throttle_unauthenticated_api_enabled": False,
    "throttle_unauthenticated_api_requests_per_period": 3600,
    "throttle_unauthenticated_api_period_in_seconds": 3600,
    "throttle_authenticated_web_enabled": False,
    "throttle_authenticated_web_requests_per_period": 7200,
    "throttle_authenticated_web_period_in_seconds": 3600,
    "throttle_unauthenticated_enabled": False,
    "throttle_unauthenticated_requests_per_period": 3600,
    "throttle_unauthenticated_period_in_seconds": 3600,
    "throttle_protected_paths_enabled": False,
    "throttle_protected_paths_requests_per_period": 10,
    "throttle_protected_paths_period_in_seconds": 60,
    "throttle_authenticated_git_lfs_enabled": False,
    "throttle_authenticated_git_lfs_requests_per_period": 1000,
    "throttle_authenticated_git_lfs_period_in_seconds": 60,
    "throttle_authenticated_files_api_enabled": False,
    "throttle_authenticated_files_api_requests_per_period": 125,
    "throttle_authenticated_files_api_period_in_seconds": 15,
    "throttle_unauthenticated_files_api_enabled": False,
    "throttle_unauthenticated_files_api_requests_per_period": 125,
    "throttle_unauthenticated_files_api_period_in_seconds": 15,
    "throttle_authenticated_packages_api_enabled": False,
    "throttle_authenticated_packages_api_requests_per_period": 1000,
    "throttle_authenticated_packages_api_period_in_seconds": 15,
    "throttle_unauthenticated_packages_api_enabled": False,
    "throttle_unauthenticated_packages_api_requests_per_period": 800,
    "throttle_unauthenticated_packages_api_period_in_seconds": 15,
    "throttle_authenticated_deprecated_api_enabled": False,
    "throttle_authenticated_deprecated_api_requests_per_period": 3600,
    "throttle_authenticated_deprecated_api_period_in_seconds": 3600,
    "throttle_unauthenticated_deprecated_api_enabled": False,
    "throttle_unauthenticated_deprecated_api_requests_per_period": 1800,
    "throttle_unauthenticated_deprecated_api_period_in_seconds": 3600,
    "protected_paths": [
        "/users/password",
        "/users/sign_in",
        "/api/v3/session.json",
        "/api/v3/session",
        "/api/v4/session.json",
        "/api/v4/session",
        "/users",
        "/users/confirmation",
        "/unsubscribes/",
        "/import/github/personal_access_token",
        "/admin/session",
    ],
    # The body of a 429 (None: GitLab's "Retry later").
    "rate_limiting_response_text": None,
    # Everything else GitLab's settings API answers; kiln keeps these and shows them (the
    # README's Settings section says which of them change what kiln does). Names follow the
    # spec where it renames a third-party product.
    "abuse_notification_email": None,
    "admin_mode": False,
    "allow_account_deletion": True,
    "allow_all_integrations": True,
    "allowed_integrations": [],
    "allow_group_owners_to_manage_ldap": True,
    "allow_project_creation_for_guest_and_below": True,
    "allow_runner_registration_token": True,
    "archive_builds_in_human_readable": None,
    "asciidoc_max_includes": 32,
    "asset_proxy_enabled": False,
    "asset_proxy_secret_key": None,
    "asset_proxy_url": None,
    "asset_proxy_allowlist": [],
    "authorized_keys_enabled": True,
    "auto_ban_user_on_excessive_projects_download": False,
    "auto_devops_domain": None,
    "auto_devops_enabled": True,
    "autocomplete_users": 300,
    "autocomplete_users_unauthenticated": 100,
    "automatic_purchased_storage_allocation": False,
    "avatarsvc_enabled": True,
    "bulk_import_concurrent_pipeline_batch_limit": 25,
    "bulk_import_enabled": False,
    "bulk_import_max_download_file_size": 5120,
    "check_namespace_plan": False,
    "ci_max_includes": 150,
    "ci_max_total_yaml_size_bytes": 314572800,
    "cloudcluster_access_key_id": None,
    "cloudcluster_account_id": None,
    "cloudcluster_integration_enabled": False,
    "cloudcluster_secret_access_key": None,
    "commit_email_hostname": None,
    "concurrent_bitbucket_import_jobs_limit": 100,
    "concurrent_bitbucket_server_import_jobs_limit": 100,
    "concurrent_github_import_jobs_limit": 1000,
    "concurrent_relation_batch_export_limit": 8,
    "container_expiration_policies_enable_historic_entries": False,
    "container_registry_cleanup_tags_service_max_list_size": 200,
    "container_registry_delete_tags_service_timeout": 250,
    "container_registry_expiration_policies_caching": True,
    "container_registry_expiration_policies_worker_capacity": 4,
    "container_registry_token_expire_delay": 5,
    "custom_http_clone_url_root": None,
    "dashboard_enabled": False,
    "dashboard_url": "/-/grafana",
    "deactivate_dormant_users": False,
    "deactivate_dormant_users_period": 90,
    "decompress_archive_file_timeout": 210,
    "default_artifacts_expire_in": "30 days",
    # None: as default_branch_protection says.
    "default_branch_protection_defaults": None,
    "default_preferred_language": "en",
    "default_project_deletion_protection": False,
    "default_snippet_visibility": "private",
    "default_syntax_highlighting_theme": 1,
    "delete_inactive_projects": False,
    "delete_unconfirmed_users": False,
    "diagramsnet_enabled": True,
    "diagramsnet_url": "https://embed.diagrams.net",
    "diagramtool_enabled": False,
    "diagramtool_url": None,
    "disable_admin_oauth_scopes": False,
    "disable_feed_token": False,
    "disable_overriding_approvers_per_merge_request": False,
    "disable_personal_access_tokens": False,
    "disabled_oauth_sign_in_sources": [],
    "downstream_pipeline_trigger_limit_per_project_user_sha": 0,
    "duo_features_enabled": True,
    "email_additional_text": None,
    "email_author_in_body": False,
    "email_confirmation_setting": "off",
    "email_restrictions": None,
    "email_restrictions_enabled": False,
    "enable_artifact_external_redirect_warning_page": True,
    "enforce_namespace_storage_limit": False,
    "external_auth_client_cert": None,
    "external_auth_client_key": None,
    "external_auth_client_key_pass": None,
    "external_authorization_service_default_label": None,
    "external_authorization_service_enabled": False,
    "external_authorization_service_timeout": 0.5,
    "external_authorization_service_url": None,
    "external_pipeline_validation_service_timeout": None,
    "external_pipeline_validation_service_token": None,
    "external_pipeline_validation_service_url": None,
    "failed_login_attempts_unlock_period_in_minutes": None,
    "file_template_project_id": None,
    "fulltext_aws": False,
    "fulltext_aws_access_key": None,
    "fulltext_aws_region": "us-east-1",
    "fulltext_aws_secret_access_key": None,
    "fulltext_indexed_field_length_limit": 0,
    "fulltext_indexed_file_size_limit_kb": 1024,
    "fulltext_indexing": False,
    "fulltext_limit_indexing": False,
    "fulltext_max_bulk_concurrency": 10,
    "fulltext_max_bulk_size_mb": 10,
    "fulltext_max_code_indexing_concurrency": 30,
    "fulltext_namespace_ids": [],
    "fulltext_password": None,
    "fulltext_project_ids": [],
    "fulltext_requeue_workers": False,
    "fulltext_retry_on_failure": 0,
    "fulltext_search": False,
    "fulltext_url": "http://localhost:9200",
    "fulltext_username": None,
    "fulltext_worker_number_of_shards": 2,
    "geo_node_allowed_ips": "0.0.0.0/0, ::/0",
    "geo_status_timeout": 10,
    "git_rate_limit_users_alertlist": [],
    "git_rate_limit_users_allowlist": [],
    "git_two_factor_session_expiry": 15,
    "gitlab_dedicated_instance": False,
    "gitlab_environment_toolkit_instance": False,
    "gitlab_shell_operation_limit": 600,
    "gitpod_enabled": False,
    "gitpod_url": "https://gitpod.io/",
    "globally_allowed_ips": "",
    "group_owners_can_manage_default_branch_protection": True,
    "group_runner_token_expiration_interval": None,
    "hashed_storage_enabled": True,
    "helm_max_packages_count": 1000,
    "help_page_hide_commercial_content": False,
    "help_page_support_url": None,
    "help_page_text": None,
    "hide_third_party_offers": False,
    "housekeeping_enabled": True,
    "housekeeping_optimize_repository_period": 10,
    "html_emails_enabled": True,
    "import_sources": [
        "github",
        "bitbucket",
        "bitbucket_server",
        "fogbugz",
        "git",
        "gitlab_project",
        "gitea",
        "manifest",
    ],
    "inactive_projects_delete_after_months": 2,
    "inactive_projects_min_size_mb": 0,
    "inactive_projects_send_warning_email_after_months": 1,
    "include_optional_metrics_in_service_ping": True,
    "instance_statistics_visibility_private": False,
    "invisible_captcha_enabled": False,
    "issues_create_limit": 0,
    "jira_connect_additional_audience_url": None,
    "jira_connect_application_key": None,
    "jira_connect_proxy_url": None,
    "jira_connect_public_key_storage_enabled": False,
    "keep_latest_artifact": True,
    "kroki_enabled": False,
    "kroki_formats": {"blockdiag": False, "bpmn": False, "excalidraw": False},
    "kroki_url": None,
    "local_markdown_version": 0,
    "lock_duo_features_enabled": False,
    "login_recaptcha_protection_enabled": False,
    "mailgun_events_enabled": False,
    "mailgun_signing_key": None,
    "maintenance_mode": False,
    "maintenance_mode_message": None,
    "maven_package_requests_forwarding": True,
    "max_artifacts_size": 100,
    "max_decompressed_archive_size": 25600,
    "max_export_size": 0,
    "max_import_remote_file_size": 10240,
    "max_import_size": 0,
    "max_login_attempts": None,
    "max_number_of_repository_downloads": 0,
    "max_number_of_repository_downloads_within_time_period": 0,
    "max_pages_size": 100,
    "max_personal_access_token_lifetime": None,
    "max_ssh_key_lifetime": None,
    "max_terraform_state_size_bytes": 0,
    "max_yaml_depth": 100,
    "max_yaml_size_bytes": 2097152,
    "metrics_method_call_threshold": 10,
    "minimum_password_length": 8,
    "mirror_available": True,
    "mirror_capacity_threshold": 50,
    "mirror_max_capacity": 100,
    "mirror_max_delay": 300,
    "notify_on_unknown_sign_in": True,
    "npm_package_requests_forwarding": True,
    "nuget_skip_metadata_url_validation": False,
    "package_metadata_purl_types": [],
    "package_registry_allow_anyone_to_pull_option": True,
    "package_registry_cleanup_policies_worker_capacity": 2,
    "pages_domain_verification_enabled": True,
    "password_lowercase_required": False,
    "password_number_required": False,
    "password_symbol_required": False,
    "password_uppercase_required": False,
    "performance_bar_allowed_group_id": None,
    "personal_access_token_prefix": "glpat-",
    "pipeline_limit_per_project_user_sha": 0,
    "polling_interval_multiplier": 1.0,
    "prevent_merge_requests_author_approval": False,
    "prevent_merge_requests_committers_approval": False,
    "project_export_enabled": True,
    "project_jobs_api_rate_limit": 600,
    "project_runner_token_expiration_interval": None,
    "projects_api_rate_limit_unauthenticated": 400,
    "prometheus_metrics_enabled": True,
    "protected_ci_variables": True,
    "push_event_activities_limit": 3,
    "push_event_hooks_limit": 3,
    "pypi_package_requests_forwarding": True,
    "raw_blob_request_limit": 300,
    "receive_max_input_size": None,
    "receptive_cluster_agents_enabled": False,
    "recaptcha_enabled": False,
    "recaptcha_private_key": None,
    "recaptcha_site_key": None,
    "remember_me_enabled": True,
    "repository_checks_enabled": True,
    "repository_size_limit": 0,
    "repository_storages": ["default"],
    "repository_storages_weighted": {"default": 100},
    "repostore_timeout_default": 55,
    "repostore_timeout_fast": 10,
    "repostore_timeout_medium": 30,
    "require_admin_two_factor_authentication": False,
    "require_personal_access_token_expiry": True,
    "require_two_factor_authentication": False,
    "resource_usage_limits": {},
    "runner_token_expiration_interval": None,
    "scan_execution_policies_action_limit": 10,
    "scan_execution_policies_schedule_limit": 0,
    "search_rate_limit": 30,
    "search_rate_limit_unauthenticated": 10,
    "secret_push_protection_available": False,
    "security_approval_policies_limit": 5,
    "security_policy_global_group_approvers_enabled": True,
    "security_txt_content": None,
    "service_access_tokens_expiration_enforced": True,
    "session_expire_from_init": False,
    "shared_runners_enabled": True,
    "shared_runners_minutes": 0,
    "shared_runners_text": None,
    "sidekiq_job_limiter_compression_threshold_bytes": 100000,
    "sidekiq_job_limiter_limit_bytes": 0,
    "sidekiq_job_limiter_mode": "compress",
    "sign_in_restrictions": {},
    "silent_admin_exports_enabled": False,
    "silent_mode_enabled": False,
    "slack_app_enabled": False,
    "slack_app_id": None,
    "slack_app_secret": None,
    "slack_app_signing_secret": None,
    "slack_app_verification_token": None,
    "snippet_size_limit": 52428800,
    "snowplow_app_id": None,
    "snowplow_collector_hostname": None,
    "snowplow_cookie_domain": None,
    "snowplow_database_collector_hostname": None,
    "snowplow_enabled": False,
    "sourcegraph_enabled": False,
    "sourcegraph_public_only": True,
    "sourcegraph_url": None,
    "spam_check_api_key": None,
    "spam_check_endpoint_enabled": False,
    "spam_check_endpoint_url": None,
    "spamfilter_api_key": None,
    "spamfilter_enabled": False,
    "static_objects_external_storage_auth_token": None,
    "static_objects_external_storage_url": None,
    "suggest_pipeline_enabled": True,
    "terminal_max_session_time": 0,
    "time_tracking_limit_to_hours": False,
    "two_factor_grace_period": 48,
    "unconfirmed_users_delete_after_days": 7,
    "unique_ips_limit_enabled": False,
    "unique_ips_limit_per_user": 10,
    "unique_ips_limit_time_window": 3600,
    "update_runner_versions_enabled": True,
    "updating_name_disabled_for_users": False,
    "usage_ping_enabled": True,
    "use_clickhouse_for_analytics": False,
    "user_deactivation_emails_enabled": True,
    "user_default_external": False,
    "user_default_internal_regex": None,
    "user_defaults_to_private_profile": False,
    "user_oauth_applications": True,
    "user_show_add_ssh_key_message": True,
    "users_api_limit_followers": 100,
    "users_api_limit_following": 100,
    "users_api_limit_gpg_key": 120,
    "users_api_limit_gpg_keys": 120,
    "users_api_limit_key": 120,
    "users_api_limit_keys": 120,
    "users_api_limit_status": 240,
    "valid_runner_registrars": ["project", "group"],
    "version_check_enabled": True,
    "vscode_extension_marketplace": {},
    "whats_new_variant": "all_tiers",
    "wiki_page_max_content_bytes": 52428800,
}


# Settings whose default does not tell their kind (kind_of reads the rest off the default).
KINDS: dict[str, Kind] = {
    "default_project_visibility": "vis",
    "default_group_visibility": "vis",
    "default_snippet_visibility": "vis",
    "restricted_visibility_levels": "vis_list",
    "domain_whitelist": "list",
    "default_branch_protection": (0, 1, 2, 3, 4),
    "default_project_creation": (0, 1, 2, 3, 4),
    "first_day_of_week": (0, 1, 6),
    "enabled_git_access_protocol": ("ssh", "http", "nil", "all", ""),
    "email_confirmation_setting": ("off", "soft", "hard"),
    "sidekiq_job_limiter_mode": ("track", "compress"),
    "whats_new_variant": ("all_tiers", "current_tier", "disabled"),
    "external_authorization_service_timeout": "float",
    "polling_interval_multiplier": "float",
    "default_branch_protection_defaults": "hash",
    "fulltext_namespace_ids": "ints",
    "fulltext_project_ids": "ints",
    "git_rate_limit_users_alertlist": "ints",
    "package_metadata_purl_types": "ints",
    "external_pipeline_validation_service_timeout": "int?",
    "failed_login_attempts_unlock_period_in_minutes": "int?",
    "file_template_project_id": "int?",
    "group_runner_token_expiration_interval": "int?",
    "max_login_attempts": "int?",
    "max_personal_access_token_lifetime": "int?",
    "max_ssh_key_lifetime": "int?",
    "project_runner_token_expiration_interval": "int?",
    "receive_max_input_size": "int?",
    "runner_token_expiration_interval": "int?",
    "performance_bar_allowed_group_id": "int?",
}


def kind_of(name: str) -> Kind:
    kind = KINDS.get(name)
    if kind is not None:
        return kind
    default = DEFAULTS[name]
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, list):
        return "list"
    if isinstance(default, dict):
        return "hash"
    return "str"


# Deprecated and renamed parameters, each with the setting it sets (the view answers both).
ALIASES: dict[str, str] = {
    "admin_notification_email": "abuse_notification_email",
    "allow_local_requests_from_hooks_and_services": "allow_local_requests_from_web_hooks_and_services",
    "asset_proxy_whitelist": "asset_proxy_allowlist",
    "domain_allowlist": "domain_whitelist",
    "domain_denylist": "domain_blacklist",
    "domain_denylist_enabled": "domain_blacklist_enabled",
    "housekeeping_incremental_repack_period": "housekeeping_optimize_repository_period",
    "password_authentication_enabled": "password_authentication_enabled_for_web",
    "signin_enabled": "password_authentication_enabled_for_web",
    "throttle_unauthenticated_web_enabled": "throttle_unauthenticated_enabled",
    "throttle_unauthenticated_web_period_in_seconds": "throttle_unauthenticated_period_in_seconds",
    "throttle_unauthenticated_web_requests_per_period": "throttle_unauthenticated_requests_per_period",
}


# ----------------------------------------------------------------------------- the view


class InstanceSettings(Mapping[str, Any]):
    """Read-only view: defaults overlaid with what was stored. `terms` is the latest version
    when the view is read from the database; the row's id and times come with it."""

    def __init__(
        self,
        stored: Mapping[str, Any],
        *,
        terms: str | None = None,
        id: int | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
    ) -> None:
        self._values = {**DEFAULTS, **stored}
        if terms is not None:
            self._values["terms"] = terms
        self.id = id
        self.created_at = created_at
        self.updated_at = updated_at

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


_SETTINGS = ApplicationSetting.__table__
_TERMS = Term.__table__


def _first(column: Any) -> Any:
    return select(column).order_by(_SETTINGS.c.id).limit(1).scalar_subquery()


# One row whether or not the settings row exists yet: the row's columns and the latest terms.
_CURRENT = reusable(
    select(
        _first(_SETTINGS.c.id).label("id"),
        type_coerce(_first(_SETTINGS.c["values"]), JSON).label("stored"),
        utc_iso(_first(_SETTINGS.c.created_at)).label("created_at"),
        utc_iso(_first(_SETTINGS.c.updated_at)).label("updated_at"),
        select(_TERMS.c.terms).order_by(_TERMS.c.id.desc()).limit(1).scalar_subquery().label("terms"),
    )
)


class _Made:
    """The rows last read and the view made of them (one tuple, replaced whole): reads.run
    hands back the same rows while no write was committed anywhere, and then the same view
    is the answer."""

    last: tuple[Rows, InstanceSettings] | None = None


def current(db: Session) -> InstanceSettings:
    rows = run(db, _CURRENT)
    made = _Made.last
    if made is not None and made[0] is rows:
        return made[1]
    row = rows.first()
    view = InstanceSettings(
        row.stored or {},
        terms=row.terms,
        id=row.id,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
    _Made.last = (rows, view)
    return view


def row_for_update(db: Session) -> ApplicationSetting | None:
    return db.scalars(
        select(ApplicationSetting).order_by(ApplicationSetting.id).limit(1).with_for_update()
    ).first()


def latest_terms(db: Session) -> str | None:
    return db.scalars(select(Term.terms).order_by(Term.id.desc()).limit(1)).first()


def write(db: Session, row: ApplicationSetting | None, changes: Mapping[str, Any]) -> None:
    """Store changed settings; new terms text becomes a new terms version. A setting given as
    None that has a default of its own (default_branch_name) goes back to it."""
    changes = dict(changes)
    terms = changes.pop("terms", None)
    if row is None:
        row = ApplicationSetting(values={})
        db.add(row)
    values = {**row.values, **changes}
    if "default_branch_name" in changes and not changes["default_branch_name"]:
        values.pop("default_branch_name")
    row.values = values
    if isinstance(terms, str) and terms.strip() and terms.strip() != latest_terms(db):
        db.add(Term(terms=terms.strip()))
    db.flush()


def update(db: Session, changes: Mapping[str, Any]) -> InstanceSettings:
    """Change settings as they are given (kiln's own callers; the API checks first)."""
    changes = {ALIASES.get(name, name): value for name, value in changes.items()}
    unknown = set(changes) - set(DEFAULTS)
    if unknown:
        raise KeyError(f"unknown settings: {', '.join(sorted(unknown))}")
    with transaction(db):
        write(db, row_for_update(db), changes)
    return current(db)


def ensure_row(db: Session) -> InstanceSettings:
    """The settings with their row, made on first read as GitLab makes it from defaults."""
    settings = current(db)
    if settings.id is None:
        with transaction(db):
            if row_for_update(db) is None:
                write(db, None, {})
        settings = current(db)
    return settings
