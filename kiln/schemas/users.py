"""Request contracts for users, user status and blocking (spec part 3 "Users")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, model_validator

from kiln.schemas._types import (
    Flag,
    GrapeMessage,
    NullFalseFlag,
    OptionalInt,
    PageParams,
    Params,
    SearchText,
    When,
)


class UserList(PageParams):
    search: SearchText | None = None
    username: str | None = None
    active: Flag | None = None
    blocked: Flag | None = None
    external: Flag | None = None
    exclude_external: Flag | None = None
    exclude_internal: Flag | None = None
    without_project_bots: Flag | None = None
    humans: Flag | None = None
    admins: Flag | None = None
    extern_uid: str | None = None
    provider: str | None = None
    created_before: When | None = None
    created_after: When | None = None
    without_projects: Flag | None = None
    custom_attributes: dict[str, str] | None = None
    with_custom_attributes: Flag = False
    order_by: Literal["id", "name", "username", "created_at", "updated_at"] = "id"
    sort: Literal["asc", "desc"] | None = None
    exclude_active: Flag | None = None
    exclude_humans: Flag | None = None
    two_factor: Literal["enabled", "disabled"] | None = None
    id_after: OptionalInt = None
    id_before: OptionalInt = None


class UserGet(Params):
    with_custom_attributes: Flag = False


class _UserFields(Params):
    """Fields shared by create and update; absent ones are left alone on update."""

    # The spec: private_profile null is treated as false.
    keep_null = frozenset({"private_profile"})

    admin: Flag | None = None
    bio: str | None = None
    can_create_group: Flag | None = None
    color_scheme_id: OptionalInt = None
    extern_uid: str | None = None
    external: Flag | None = None
    extra_shared_runners_minutes_limit: OptionalInt = None
    group_id_for_saml: OptionalInt = None
    linkedin: str | None = None
    discord: str | None = None
    location: str | None = None
    organization: str | None = None
    job_title: str | None = None
    pronouns: str | None = None
    private_profile: NullFalseFlag = None
    projects_limit: OptionalInt = None
    provider: str | None = None
    public_email: str | None = None
    shared_runners_minutes_limit: OptionalInt = None
    skip_confirmation: Flag | None = None
    skype: str | None = None
    theme_id: OptionalInt = None
    twitter: str | None = None
    website_url: str | None = None
    avatar: Any = None


def _email(value: Any) -> Any:
    # Addresses are kept trimmed and lower-case, as GitLab's Devise configuration does.
    return value.strip().lower() if isinstance(value, str) else value


Email = Annotated[str, BeforeValidator(_email)]


class UserCreate(_UserFields):
    email: Email
    name: str
    username: str
    password: str | None = None
    reset_password: Flag | None = None
    force_random_password: Flag | None = None

    @model_validator(mode="after")
    def _password_mode(self) -> UserCreate:
        if self.password is None and self.reset_password is None and self.force_random_password is None:
            raise GrapeMessage(
                "password, reset_password, force_random_password are missing, "
                "at least one parameter must be provided"
            )
        if self.password is None and not self.reset_password and not self.force_random_password:
            raise GrapeMessage("password is missing")
        return self


class UserUpdate(_UserFields):
    email: Email | None = None
    name: str | None = None
    username: str | None = None
    password: str | None = None
    note: str | None = None
    skip_reconfirmation: Flag | None = None


class UserDelete(Params):
    hard_delete: Flag = False


class StatusUpdate(Params):
    emoji: str | None = None
    message: str | None = None
    availability: Literal["not_set", "busy"] | None = None
    clear_status_after: (
        Literal["30_minutes", "3_hours", "8_hours", "1_day", "3_days", "7_days", "30_days"] | None
    ) = None


class MembershipList(PageParams):
    type: Literal["Project", "Namespace"] | None = None
