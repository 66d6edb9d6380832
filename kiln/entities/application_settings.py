"""The application settings view (GitLab's Entities::ApplicationSetting), for administrators."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Secrets GitLab never answers, not even to administrators; the other secrets (spam filter
# and CAPTCHA keys, the external authorization client key, ...) are answered as stored.
HIDDEN = frozenset(
    {"asset_proxy_secret_key", "cloudcluster_secret_access_key", "runners_registration_token_nonce"}
)
# Older and renamed names answered beside the setting they stand for.
ALSO_AS: dict[str, str] = {
    "admin_notification_email": "abuse_notification_email",
    "allow_local_requests_from_hooks_and_services": "allow_local_requests_from_web_hooks_and_services",
    "asset_proxy_whitelist": "asset_proxy_allowlist",
    "domain_allowlist": "domain_whitelist",
    "domain_denylist": "domain_blacklist",
    "domain_denylist_enabled": "domain_blacklist_enabled",
    "password_authentication_enabled": "password_authentication_enabled_for_web",
    "signin_enabled": "password_authentication_enabled_for_web",
    "throttle_unauthenticated_web_enabled": "throttle_unauthenticated_enabled",
    "throttle_unauthenticated_web_period_in_seconds": "throttle_unauthenticated_period_in_seconds",
    "throttle_unauthenticated_web_requests_per_period": "throttle_unauthenticated_requests_per_period",
    # The older housekeeping periods are all the one period now.
    "housekeeping_full_repack_period": "housekeeping_optimize_repository_period",
    "housekeeping_gc_period": "housekeeping_optimize_repository_period",
    "housekeeping_incremental_repack_period": "housekeeping_optimize_repository_period",
}

_DEVELOPER, _MAINTAINER = 30, 40
# default_branch_protection's levels as the branch protection defaults they stand for:
# who may push and merge, force pushes, and developers' first push to a new project.
_PROTECTION: dict[int, tuple[int, int, bool, bool]] = {
    0: (_DEVELOPER, _DEVELOPER, True, False),
    1: (_DEVELOPER, _MAINTAINER, False, False),
    2: (_MAINTAINER, _MAINTAINER, False, False),
    3: (_MAINTAINER, _DEVELOPER, False, False),
    4: (_MAINTAINER, _MAINTAINER, False, True),
}


def branch_protection_defaults(level: int) -> dict[str, Any]:
    push, merge, force, initial = _PROTECTION.get(level, _PROTECTION[2])
    return {
        "allowed_to_push": [{"access_level": push}],
        "allow_force_push": force,
        "allowed_to_merge": [{"access_level": merge}],
        "developer_can_initial_push": initial,
    }


def application_settings(settings: Mapping[str, Any], meta: Any) -> dict[str, Any]:
    """`meta` carries the row's id, created_at and updated_at."""
    view: dict[str, Any] = {"id": meta.id, "created_at": meta.created_at, "updated_at": meta.updated_at}
    view.update((name, value) for name, value in settings.items() if name not in HIDDEN)
    view.update((name, settings[source]) for name, source in ALSO_AS.items())
    if view.get("default_branch_protection_defaults") is None:
        view["default_branch_protection_defaults"] = branch_protection_defaults(
            int(settings["default_branch_protection"])
        )
    view["hashed_storage_enabled"] = True
    view["housekeeping_bitmaps_enabled"] = True
    return view
