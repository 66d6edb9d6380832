"""The route table: read it to see kiln's whole HTTP surface."""

from __future__ import annotations

from litestar.handlers import HTTPRouteHandler

from kiln.api import (
    custom_attributes,
    groups,
    members,
    meta,
    namespaces,
    oauth,
    personal_access_tokens,
    projects,
    sessions,
    uploads,
    users,
)

API_PREFIX = "/api/v4"

# Mounted under /api/v4.
API_ROUTES: list[HTTPRouteHandler] = [
    meta.version,
    meta.metadata,
    meta.openapi,
    users.list_users,
    users.get_user,
    users.create_user,
    users.update_user,
    users.delete_identity,
    users.delete_user,
    users.block_user,
    users.unblock_user,
    users.current_user,
    users.current_status,
    users.set_status,
    users.status_of_user,
    personal_access_tokens.list_tokens,
    personal_access_tokens.current_token,
    personal_access_tokens.revoke_current,
    personal_access_tokens.rotate_current,
    personal_access_tokens.get_token,
    personal_access_tokens.revoke_token,
    personal_access_tokens.rotate_token,
    personal_access_tokens.create_token,
    personal_access_tokens.list_impersonation_tokens,
    personal_access_tokens.create_impersonation_token,
    personal_access_tokens.get_impersonation_token,
    personal_access_tokens.revoke_impersonation_token,
    projects.list_projects,
    projects.list_user_projects,
    projects.list_starred_projects,
    projects.create_project,
    projects.create_project_for_user,
    projects.get_project,
    projects.update_project,
    projects.delete_project,
    projects.restore_project,
    projects.archive_project,
    projects.unarchive_project,
    projects.fork_project,
    projects.list_forks,
    projects.star_project,
    projects.unstar_project,
    projects.list_starrers,
    projects.languages,
    projects.share_project,
    projects.unshare_project,
    projects.upload_file,
    *groups.ROUTES,
    *namespaces.ROUTES,
    *members.ROUTES,
    *custom_attributes.ROUTES,
]

# Mounted at the root: web sign-in, OAuth, health, public files.
ROOT_ROUTES: list[HTTPRouteHandler] = [
    meta.health,
    meta.liveness,
    meta.readiness,
    oauth.token,
    oauth.revoke,
    oauth.token_info,
    sessions.sign_in,
    sessions.sign_out,
    uploads.user_avatar,
    projects.uploaded_file_by_id,
    projects.uploaded_file_by_path,
]
