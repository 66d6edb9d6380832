"""Application settings as administrators change them (GitLab's Application settings API):
what a PUT may name, Grape's `requires` rules and GitLab's model validations, all checked
before anything is written. The settings themselves, their defaults and how kiln reads them
are services.instance_settings."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.durations import CALENDAR_DAY, CALENDAR_UNITS
from kiln.errors import ParamError, ValidationFailed
from kiln.models import Namespace
from kiln.policy import Action
from kiln.schemas._types import Params
from kiln.schemas.application_settings import VISIBILITIES, Kind
from kiln.services import instance_settings
from kiln.services.instance_settings import ALIASES, DEFAULTS, InstanceSettings, kind_of

# Accepted and left alone, as GitLab does: hashed storage is always on, and the older
# housekeeping periods are answered from housekeeping_optimize_repository_period.
IGNORED: dict[str, Kind] = {
    "hashed_storage_enabled": "bool",
    "housekeeping_bitmaps_enabled": "bool",
    "housekeeping_full_repack_period": "int",
    "housekeeping_gc_period": "int",
}
# The group that may use the performance bar is named by its path (performance_bar_allowed_group_id
# is that path's deprecated name); performance_bar_enabled=false clears it.
GROUP_PATHS = ("performance_bar_allowed_group_path", "performance_bar_allowed_group_id")


def update_kinds() -> dict[str, Kind]:
    """Every parameter PUT /application/settings takes, with its kind."""
    kinds = {name: kind_of(name) for name in DEFAULTS}
    kinds.update({alias: kind_of(target) for alias, target in ALIASES.items()})
    kinds.update(IGNORED)
    kinds.update(dict.fromkeys(GROUP_PATHS, "str"))
    kinds["performance_bar_enabled"] = "bool"
    return kinds


def _throttle(prefix: str) -> tuple[str, tuple[str, ...]]:
    return f"{prefix}_enabled", (f"{prefix}_requests_per_period", f"{prefix}_period_in_seconds")


# Grape's `given x do requires y`: a request that turns x on names y too, under the names
# the request used (so `domain_denylist_enabled` asks for `domain_denylist`).
REQUIRES: dict[str, tuple[str, ...]] = dict(
    [
        ("spamfilter_enabled", ("spamfilter_api_key",)),
        ("asset_proxy_enabled", ("asset_proxy_url",)),
        ("domain_blacklist_enabled", ("domain_blacklist",)),
        ("domain_denylist_enabled", ("domain_denylist",)),
        ("enforce_terms", ("terms",)),
        ("external_auth_client_cert", ("external_auth_client_key",)),
        (
            "external_authorization_service_enabled",
            (
                "external_authorization_service_default_label",
                "external_authorization_service_timeout",
                "external_authorization_service_url",
            ),
        ),
        ("diagramtool_enabled", ("diagramtool_url",)),
        ("diagramsnet_enabled", ("diagramsnet_url",)),
        ("email_restrictions_enabled", ("email_restrictions",)),
        ("gitpod_enabled", ("gitpod_url",)),
        ("kroki_enabled", ("kroki_url",)),
        ("recaptcha_enabled", ("recaptcha_private_key", "recaptcha_site_key")),
        ("require_two_factor_authentication", ("two_factor_grace_period",)),
        ("shared_runners_enabled", ("shared_runners_text",)),
        (
            "slack_app_enabled",
            ("slack_app_id", "slack_app_secret", "slack_app_signing_secret", "slack_app_verification_token"),
        ),
        ("snowplow_enabled", ("snowplow_collector_hostname",)),
        ("sourcegraph_enabled", ("sourcegraph_url",)),
        ("unique_ips_limit_enabled", ("unique_ips_limit_per_user", "unique_ips_limit_time_window")),
        _throttle("throttle_authenticated_api"),
        _throttle("throttle_authenticated_web"),
        _throttle("throttle_authenticated_packages_api"),
        _throttle("throttle_unauthenticated"),
        _throttle("throttle_unauthenticated_web"),
        _throttle("throttle_unauthenticated_api"),
        _throttle("throttle_unauthenticated_packages_api"),
    ]
)

# ----------------------------------------------------------------------------- model rules

Check = Callable[[Any], "str | None"]


def _at_least(bound: float) -> Check:
    return lambda v: None if v is None or v >= bound else f"must be greater than or equal to {bound}"


def _above(bound: float) -> Check:
    return lambda v: None if v is None or v > bound else f"must be greater than {bound}"


def _at_most(bound: float) -> Check:
    return lambda v: None if v is None or v <= bound else f"must be less than or equal to {bound}"


def _below(bound: float) -> Check:
    return lambda v: None if v is None or v < bound else f"must be less than {bound}"


def _longest(count: int) -> Check:
    return lambda v: None if v is None or len(v) <= count else f"is too long (maximum is {count} characters)"


def _entries(count: int) -> Check:
    return lambda v: None if v is None or len(v) <= count else f"is too long (maximum is {count} entries)"


def _matches(pattern: str, message: str) -> Check:
    compiled = re.compile(pattern)
    return lambda v: None if not v or compiled.fullmatch(v) else message


def _key_sizes(*sizes: int) -> Check:
    allowed = {-1, 0, *sizes}
    text = ", ".join(str(s) for s in sizes)
    return lambda v: None if v in allowed else f"must be forbidden, allowed, or one of these sizes: {text}"


def _duration(at_least_seconds: int, message: str) -> Check:
    def check(value: Any) -> str | None:
        if not value or (isinstance(value, str) and value.strip().lower() == "never"):
            return None
        seconds = duration_seconds(value)
        if seconds is None:
            return "is not a correct duration"
        return message if seconds < at_least_seconds else None

    return check


_POSITIVE = (_above(0),)
_NATURAL = (_at_least(0),)

# GitLab's validations of single settings (app/models/application_setting.rb).
RULES: dict[str, tuple[Check, ...]] = {
    **dict.fromkeys(
        [
            "bulk_import_concurrent_pipeline_batch_limit",
            "concurrent_bitbucket_import_jobs_limit",
            "concurrent_bitbucket_server_import_jobs_limit",
            "concurrent_github_import_jobs_limit",
            "concurrent_relation_batch_export_limit",
            "container_registry_token_expire_delay",
            "external_pipeline_validation_service_timeout",
            "failed_login_attempts_unlock_period_in_minutes",
            "geo_status_timeout",
            "git_two_factor_session_expiry",
            "housekeeping_optimize_repository_period",
            "inactive_projects_delete_after_months",
            "inactive_projects_send_warning_email_after_months",
            "max_artifacts_size",
            "max_attachment_size",
            "max_login_attempts",
            "max_yaml_depth",
            "max_yaml_size_bytes",
            "project_jobs_api_rate_limit",
            "session_expire_delay",
            "snippet_size_limit",
            *(
                name
                for name in DEFAULTS
                if name.startswith("throttle_")
                and name.endswith(("_period_in_seconds", "_requests_per_period"))
            ),
        ],
        _POSITIVE,
    ),
    **dict.fromkeys(
        [
            "autocomplete_users",
            "autocomplete_users_unauthenticated",
            "bulk_import_max_download_file_size",
            "ci_max_includes",
            "ci_max_total_yaml_size_bytes",
            "container_registry_cleanup_tags_service_max_list_size",
            "container_registry_delete_tags_service_timeout",
            "container_registry_expiration_policies_worker_capacity",
            "decompress_archive_file_timeout",
            "default_projects_limit",
            "downstream_pipeline_trigger_limit_per_project_user_sha",
            "fulltext_indexed_field_length_limit",
            "fulltext_indexed_file_size_limit_kb",
            "fulltext_max_bulk_concurrency",
            "fulltext_max_bulk_size_mb",
            "fulltext_max_code_indexing_concurrency",
            "fulltext_retry_on_failure",
            "fulltext_worker_number_of_shards",
            "gitlab_shell_operation_limit",
            "inactive_projects_min_size_mb",
            "issues_create_limit",
            "max_decompressed_archive_size",
            "max_export_size",
            "max_import_remote_file_size",
            "max_import_size",
            "max_terraform_state_size_bytes",
            "metrics_method_call_threshold",
            "mirror_capacity_threshold",
            "mirror_max_capacity",
            "mirror_max_delay",
            "package_registry_cleanup_policies_worker_capacity",
            "pipeline_limit_per_project_user_sha",
            "polling_interval_multiplier",
            "projects_api_rate_limit_unauthenticated",
            "push_event_activities_limit",
            "push_event_hooks_limit",
            "raw_blob_request_limit",
            "receive_max_input_size",
            "repository_size_limit",
            "repostore_timeout_default",
            "repostore_timeout_fast",
            "repostore_timeout_medium",
            "search_rate_limit",
            "search_rate_limit_unauthenticated",
            "shared_runners_minutes",
            "sidekiq_job_limiter_compression_threshold_bytes",
            "sidekiq_job_limiter_limit_bytes",
            "terminal_max_session_time",
            "two_factor_grace_period",
            "unique_ips_limit_time_window",
            *(name for name in DEFAULTS if name.startswith("users_api_limit_")),
        ],
        _NATURAL,
    ),
    "asciidoc_max_includes": (_at_least(0), _at_most(64)),
    "deactivate_dormant_users_period": (_at_least(90),),
    # GitLab's 1 to 90 days, and kiln's 0: removed at once.
    "deletion_adjourned_period": (_at_least(0), _at_most(90)),
    "diff_max_patch_bytes": (_at_least(200 * 1024), _at_most(500 * 1024)),
    "diff_max_files": (_at_least(1000), _at_most(3000)),
    "diff_max_lines": (_at_least(50_000), _at_most(100_000)),
    "default_syntax_highlighting_theme": (_at_least(1), _at_most(6)),
    "external_authorization_service_timeout": (_at_least(0.001), _at_most(10)),
    "group_runner_token_expiration_interval": (_at_least(7200),),
    "helm_max_packages_count": (_at_least(1),),
    "local_markdown_version": (_at_least(0), _below(65536)),
    "max_number_of_repository_downloads": (_at_least(0), _at_most(10_000)),
    "max_number_of_repository_downloads_within_time_period": (_at_least(0), _at_most(864_000)),
    "max_pages_size": (_at_least(0), _below(1024 * 1024)),
    "max_personal_access_token_lifetime": (_at_least(1), _at_most(365)),
    "max_ssh_key_lifetime": (_at_least(1), _at_most(365)),
    "minimum_password_length": (_at_least(8), _at_most(128)),
    "project_runner_token_expiration_interval": (_at_least(7200),),
    "runner_token_expiration_interval": (_at_least(7200),),
    "scan_execution_policies_action_limit": (_at_least(0), _at_most(20)),
    "scan_execution_policies_schedule_limit": (_at_least(0), _at_most(20)),
    "security_approval_policies_limit": (_at_least(1), _at_most(20)),
    "unconfirmed_users_delete_after_days": (_at_least(1),),
    "unique_ips_limit_per_user": (_at_least(1),),
    "wiki_page_max_content_bytes": (_at_least(1024),),
    "rsa_key_restriction": (_key_sizes(1024, 2048, 3072, 4096),),
    "dsa_key_restriction": (_key_sizes(1024, 2048, 3072),),
    "ecdsa_key_restriction": (_key_sizes(256, 384, 521),),
    "ed25519_key_restriction": (_key_sizes(256),),
    "ecdsa_sk_key_restriction": (_key_sizes(256),),
    "ed25519_sk_key_restriction": (_key_sizes(256),),
    "archive_builds_in_human_readable": (_duration(CALENDAR_DAY, "must be at least 1 day"),),
    "default_artifacts_expire_in": (_duration(0, ""),),
    "commit_email_hostname": (_matches(r"[^@]+", "is invalid"),),
    "default_ci_config_path": (
        _longest(255),
        lambda v: (
            "cannot include leading slash or directory traversal."
            if v and (".." in v or v.startswith("/"))
            else None
        ),
    ),
    "personal_access_token_prefix": (
        _longest(20),
        _matches(
            r"[a-zA-Z0-9_+=/@:.-]+",
            "can contain only letters of the Base64 alphabet (RFC4648) with the addition of '@', ':' and '.'",
        ),
    ),
    "rate_limiting_response_text": (_longest(255),),
    "security_txt_content": (_longest(2048),),
    "jira_connect_application_key": (_longest(255),),
    "jira_connect_proxy_url": (_longest(255),),
    "jira_connect_additional_audience_url": (_longest(255),),
    "spam_check_api_key": (_longest(2000),),
    "mailgun_signing_key": (_longest(255),),
    "outbound_local_requests_whitelist": (_entries(1000),),
    "protected_paths": (_entries(100),),
    "git_rate_limit_users_allowlist": (_entries(100),),
    "git_rate_limit_users_alertlist": (_entries(100),),
}

# A setting that must be present while another is on (GitLab's `presence: true, if:`).
PRESENT_WHEN: dict[str, tuple[str, ...]] = {
    "asset_proxy_enabled": ("asset_proxy_url", "asset_proxy_secret_key"),
    "diagramsnet_enabled": ("diagramsnet_url",),
    "diagramtool_enabled": ("diagramtool_url",),
    "external_auth_client_cert": ("external_auth_client_key",),
    "external_authorization_service_enabled": ("external_authorization_service_default_label",),
    "gitpod_enabled": ("gitpod_url",),
    "kroki_enabled": ("kroki_url",),
    "mailgun_events_enabled": ("mailgun_signing_key",),
    "recaptcha_enabled": ("recaptcha_site_key", "recaptcha_private_key"),
    "login_recaptcha_protection_enabled": ("recaptcha_site_key", "recaptcha_private_key"),
    "slack_app_enabled": (
        "slack_app_id",
        "slack_app_secret",
        "slack_app_signing_secret",
        "slack_app_verification_token",
    ),
    "snowplow_enabled": ("snowplow_collector_hostname",),
    "sourcegraph_enabled": ("sourcegraph_url",),
    "spam_check_endpoint_enabled": ("spam_check_endpoint_url",),
    "spamfilter_enabled": ("spamfilter_api_key",),
    "static_objects_external_storage_url": ("static_objects_external_storage_auth_token",),
}

IMPORT_SOURCES = frozenset(DEFAULTS["import_sources"])
RUNNER_REGISTRARS = frozenset({"project", "group"})
KROKI_FORMATS = frozenset(DEFAULTS["kroki_formats"])
BRANCH_PROTECTION_KEYS = frozenset(
    {"allowed_to_push", "allowed_to_merge", "allow_force_push", "developer_can_initial_push"}
)

_UNITS = CALENDAR_UNITS
_TERM = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*(?:,|and)?", re.IGNORECASE)


def duration_seconds(text: str) -> int | None:
    """A human duration ("15 days", "1 month 2 weeks", "3600") in seconds (a month is 30
    days, a year 365), as GitLab reads its duration settings; None if it is not one."""
    if not isinstance(text, str) or not text.strip() or len(text) > 100:
        return None
    total, pos, found = 0.0, 0, False
    while pos < len(text):
        match = _TERM.match(text, pos)
        if match is None or match.end() == pos:
            return None if text[pos:].strip() else (round(total) if found else None)
        unit = match.group(2).lower() or "s"
        if unit not in _UNITS:
            return None
        total += float(match.group(1)) * _UNITS[unit]
        found, pos = True, match.end()
    return round(total) if found else None


# ----------------------------------------------------------------------------- the API


def read(db: Session, actor: Actor) -> InstanceSettings:
    policy.require(actor, Action.ADMIN_SETTINGS)
    return instance_settings.ensure_row(db)


def change(db: Session, actor: Actor, p: Params) -> InstanceSettings:
    """PUT /application/settings: every check before anything is written, so a refused
    request leaves the settings as they were."""
    policy.require(actor, Action.ADMIN_SETTINGS)
    sent = {name: getattr(p, name) for name in p.given()}
    _require_given(sent)
    changes = _canonical(sent)
    with transaction(db):
        row = instance_settings.row_for_update(db)
        stored = dict(row.values) if row is not None else {}
        changes.update(_performance_bar(db, sent))
        if isinstance(changes.get("kroki_formats"), dict):  # formats not named stay as they were
            changes["kroki_formats"] = {
                **InstanceSettings(stored)["kroki_formats"],
                **changes["kroki_formats"],
            }
        merged = InstanceSettings(stored | changes)
        terms = changes.get("terms")
        has_terms = (
            bool(isinstance(terms, str) and terms.strip()) or instance_settings.latest_terms(db) is not None
        )
        errors = problems(merged, set(changes), has_terms)
        if errors:
            raise ValidationFailed(errors)
        instance_settings.write(db, row, changes)
    return instance_settings.current(db)


def _require_given(sent: Mapping[str, Any]) -> None:
    given = {ALIASES.get(name, name) for name in sent}
    missing: list[str] = []
    for flag, needed in REQUIRES.items():
        if flag not in sent or not sent[flag]:
            continue
        missing += [n for n in needed if ALIASES.get(n, n) not in given and n not in missing]
    if missing:
        raise ParamError(", ".join(f"{name} is missing" for name in missing))


def _canonical(sent: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in sent.items():
        if name in IGNORED or name in GROUP_PATHS or name == "performance_bar_enabled":
            continue
        target = ALIASES.get(name, name)
        if target not in DEFAULTS:
            continue
        out[target] = _stored_form(target, value)
    return out


def _stored_form(name: str, value: Any) -> Any:
    """A parameter as the setting keeps it: "all" git protocols (or none named) is None, an
    empty archive duration never archives."""
    if name == "enabled_git_access_protocol" and value in ("nil", "all", ""):
        return None
    if name == "archive_builds_in_human_readable" and value == "":
        return None
    return value


def _performance_bar(db: Session, sent: Mapping[str, Any]) -> dict[str, Any]:
    """The group named by path, or none when the bar is turned off or no such group exists."""
    if sent.get("performance_bar_enabled") is False:
        return {"performance_bar_allowed_group_id": None}
    path = next((sent[name] for name in GROUP_PATHS if name in sent), None)
    if path is None:
        return {}
    found = None
    if path.strip():
        found = db.scalars(
            select(Namespace.id).where(
                Namespace.kind == "group", func.lower(Namespace.full_path) == path.strip().lower()
            )
        ).first()
    return {"performance_bar_allowed_group_id": found}


def problems(settings: Mapping[str, Any], changed: Iterable[str], has_terms: bool) -> dict[str, list[str]]:
    """GitLab's model validations of the settings a change touches, by attribute."""
    changed = set(changed)
    errors: dict[str, list[str]] = {}

    def add(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    for name in sorted(changed):
        value = settings[name]
        for check in RULES.get(name, ()):
            message = check(value)
            if message:
                add(name, message)
    for flag, needed in PRESENT_WHEN.items():
        if settings[flag] and changed & {flag, *needed}:
            for name in needed:
                if settings[name] in (None, "", []):
                    add(name, "can't be blank")
    _visibility_problems(settings, changed, add)
    _list_problems(settings, changed, add)
    _related_problems(settings, changed, has_terms, add)
    return errors


def _visibility_problems(
    settings: Mapping[str, Any], changed: set[str], add: Callable[[str, str], None]
) -> None:
    restricted = settings["restricted_visibility_levels"] or []
    if "restricted_visibility_levels" in changed:
        for level in restricted:
            if level not in VISIBILITIES:
                add("restricted_visibility_levels", f"'{level}' is not a valid visibility level")
    if changed & {"default_project_visibility", "default_group_visibility", "restricted_visibility_levels"}:
        for name in ("default_project_visibility", "default_group_visibility"):
            if settings[name] in restricted:
                add(name, "cannot be set to a restricted visibility level")


def _list_problems(settings: Mapping[str, Any], changed: set[str], add: Callable[[str, str], None]) -> None:
    if "import_sources" in changed:
        for source in settings["import_sources"] or []:
            if source not in IMPORT_SOURCES:
                add("import_sources", f"'{source}' is not a import source")
    if (
        "valid_runner_registrars" in changed
        and not set(settings["valid_runner_registrars"]) <= RUNNER_REGISTRARS
    ):
        add("valid_runner_registrars", "is not included in the list")
    if "kroki_formats" in changed:
        formats = settings["kroki_formats"]
        if set(formats) - KROKI_FORMATS or not all(isinstance(v, bool) for v in formats.values()):
            add("kroki_formats", "must be a valid json schema")
    if "default_branch_protection_defaults" in changed:
        given = settings["default_branch_protection_defaults"] or {}
        if set(given) - BRANCH_PROTECTION_KEYS:
            add("default_branch_protection_defaults", "must be a valid json schema")
    if "repository_storages_weighted" in changed:
        for storage, weight in settings["repository_storages_weighted"].items():
            if storage not in DEFAULTS["repository_storages"]:
                add("repository_storages_weighted", f"can't include: {storage}")
            elif not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
                add("repository_storages_weighted", f"value of '{storage}' must be between 0 and 100")


def _related_problems(
    settings: Mapping[str, Any], changed: set[str], has_terms: bool, add: Callable[[str, str], None]
) -> None:
    if settings["enforce_terms"] and "enforce_terms" in changed and not has_terms:
        add("terms", "You need to set terms to be enforced")
    blacklist = {"domain_blacklist_enabled", "domain_blacklist"}
    if settings["domain_blacklist_enabled"] and changed & blacklist and not settings["domain_blacklist"]:
        add("domain_denylist", "Domain denylist cannot be empty if denylist is enabled.")
    timeouts = ("repostore_timeout_default", "repostore_timeout_medium", "repostore_timeout_fast")
    if changed & set(timeouts):
        default, medium, fast = (settings[name] for name in timeouts)
        if medium > default:
            add("repostore_timeout_medium", f"must be less than or equal to {default}")
        if medium < fast:
            add("repostore_timeout_medium", f"must be greater than or equal to {fast}")
        if fast > default:
            add("repostore_timeout_fast", f"must be less than or equal to {default}")
    warn, delete = (
        settings["inactive_projects_send_warning_email_after_months"],
        settings["inactive_projects_delete_after_months"],
    )
    inactive = {"inactive_projects_send_warning_email_after_months", "inactive_projects_delete_after_months"}
    if changed & inactive and warn >= delete:
        add("inactive_projects_send_warning_email_after_months", f"must be less than {delete}")
    if settings["deactivate_dormant_users"] and "deactivate_dormant_users" in changed:
        period = settings["deactivate_dormant_users_period"]
        if period < 90:
            add(
                "deactivate_dormant_users_period",
                f"'{period}' days of inactivity must be greater than or equal to 90",
            )
