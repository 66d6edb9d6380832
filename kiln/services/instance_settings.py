"""Instance settings changed at run time (GitLab's application settings).

One row holds what administrators changed; everything else is the default below. Readers
call `current` once per request and pass the result down."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.db import transaction
from kiln.models import ApplicationSetting

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
    # What one diff shows at most (see kiln.config for how each bound is applied).
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
}


class InstanceSettings(Mapping[str, Any]):
    """Read-only view: defaults overlaid with what was stored."""

    def __init__(self, stored: Mapping[str, Any]) -> None:
        self._values = {**DEFAULTS, **stored}

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def current(db: Session) -> InstanceSettings:
    row = db.scalars(select(ApplicationSetting).order_by(ApplicationSetting.id).limit(1)).first()
    return InstanceSettings(row.values if row is not None else {})


def update(db: Session, changes: Mapping[str, Any]) -> InstanceSettings:
    unknown = set(changes) - set(DEFAULTS)
    if unknown:
        raise KeyError(f"unknown settings: {', '.join(sorted(unknown))}")
    with transaction(db):
        row = db.scalars(
            select(ApplicationSetting).order_by(ApplicationSetting.id).limit(1).with_for_update()
        ).first()
        if row is None:
            row = ApplicationSetting(values={})
            db.add(row)
        row.values = {**row.values, **changes}
        db.flush()
        return InstanceSettings(row.values)
