"""Every permission decision in kiln: "may this actor do X to that subject".

Access levels follow GitLab: Guest 10, Reporter 20, Developer 30, Maintainer 40, Owner 50.
A private subject the actor can't see is a 404, never a 403: `authorize` decides which one
a refusal is (404 when the actor may not read the subject, 403 when they may read it but not
do the action); `require` answers 403 for actions that have no subject to hide.
Subjects carry the actor's effective access level, computed by queries/access.py, so the
rules here stay pure functions of what they are given.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, replace
from enum import Enum, auto
from ipaddress import IPv4Network, IPv6Address, IPv6Network, ip_address

from kiln.auth.actor import Actor
from kiln.errors import Forbidden, NotFound
from kiln.models import Epic, Issue, MergeRequest, Namespace, Project, User
from kiln.models.namespaces import (
    DEVELOPER,
    GUEST,
    INTERNAL,
    MAINTAINER,
    OWNER,
    PRIVATE,
    PUBLIC,
    REPORTER,
    VISIBILITY_LEVEL,
)
from kiln.models.projects import DISABLED, ENABLED, FEATURE_PRIVATE
from kiln.queries.users import UserRow


class Action(Enum):
    ADMIN_USERS = auto()  # create, update, delete, block users; see admin-only fields
    READ_USER = auto()  # see a user at all (public profile)
    READ_USER_PROFILE = auto()  # see a user's profile fields (private_profile hides them)
    READ_USER_EMAIL = auto()  # see e-mail and sign-in fields of a user
    UPDATE_USER_STATUS = auto()
    READ_USER_TOKENS = auto()  # list and see a user's personal access tokens
    REVOKE_TOKEN = auto()
    ADMIN_TOKENS = auto()  # create tokens for others, impersonation tokens
    ADMIN_CUSTOM_ATTRIBUTES = auto()  # custom attributes of users, groups and projects
    ADMIN_SETTINGS = auto()  # application settings, plan limits, statistics (administrators)
    CREATE_GROUP = auto()  # a top-level group
    ADMIN_PROJECTS = auto()  # any project's storage, snapshot, move to a group (administrators)
    ADMIN_FEATURES = auto()  # read and set feature flags (administrators)
    # Another user's SSH keys, GPG keys and e-mail addresses; any SSH key by id or fingerprint
    # (administrators: everyone manages their own under /user).
    ADMIN_USER_KEYS = auto()

    READ_PROJECT = auto()
    READ_CODE = auto()  # repository contents
    PUSH_CODE = auto()  # write to unprotected branches (Developer); protected ones: may_push_to
    ADMIN_PROTECTED_BRANCHES = auto()  # protect, unprotect, change rules (Maintainer)
    UPDATE_PROJECT = auto()  # settings (Maintainer)
    READ_PROJECT_SETTINGS = auto()  # what Maintainers see: runners token, import URL, CI settings
    # A merge request into the project (the target; signed in and its merge requests and code
    # readable, so a fork's owner may propose to a public project); the source branch's
    # project asks PUSH_CODE (GitLab's create_merge_request_from).
    CREATE_MERGE_REQUEST_IN = auto()
    CHANGE_VISIBILITY = auto()  # visibility, path and namespace (Owner)
    ADMIN_PROJECT = auto()  # archive, delete, restore (Owner)
    TRANSFER_PROJECT = auto()  # move to another namespace (Owner; archived projects too)
    MAINTAIN_REPOSITORY = auto()  # housekeeping (Maintainer)
    FORK_PROJECT = auto()
    STAR_PROJECT = auto()
    UPLOAD_FILE = auto()
    SHARE_PROJECT = auto()
    READ_MEMBERS = auto()
    ADMIN_MEMBERS = auto()  # add, change, remove members
    MANAGE_OWNERS = auto()  # grant the Owner role, change or remove an Owner
    REQUEST_ACCESS = auto()
    ADMIN_BADGES = auto()  # add, change, remove badges (project Maintainer, group Owner)

    READ_GROUP = auto()
    UPDATE_GROUP = auto()  # settings and deletion (Owner)
    CREATE_SUBGROUP = auto()
    CREATE_PROJECT = auto()  # in a namespace (user or group)
    READ_NAMESPACE = auto()  # a user's own namespace, or a group the actor may read
    TRANSFER_PROJECTS_INTO = auto()  # move projects into a namespace (its Maintainers, Owner)

    # Planning. Issue rules that depend on the issue itself (confidential, author, assignees,
    # locked discussion) are the functions below the Action-based ones.
    READ_ISSUE = auto()  # the project's issues at all (issues feature open to the actor)
    CREATE_ISSUE = auto()  # open an issue; also comment, react, subscribe (signed in)
    ADMIN_ISSUE = auto()  # labels, milestone, assignees, any issue's fields, confidential ones (Reporter)
    DESTROY_ISSUE = auto()  # delete an issue (Owner)
    ADMIN_ISSUE_LINK = auto()  # link the project's issues to others, unlink them (Guest)
    ADMIN_LABELS = auto()  # create, change, delete, promote labels (project or group Reporter)
    ADMIN_MILESTONES = auto()  # create, change, delete, promote milestones (Reporter)
    READ_MILESTONE = auto()  # a project's milestones (its issues or merge requests open to the actor)
    ADMIN_BOARDS = auto()  # create, change, delete boards and their lists (Reporter)
    READ_EPIC = auto()  # a group's epics (anyone who sees the group)
    CREATE_EPIC = auto()  # create and change epics, link issues (group Reporter)
    DESTROY_EPIC = auto()  # delete an epic (group Owner)
    # Runners (GitLab's RunnerPolicy): a project's Maintainers and a group's Maintainers list
    # them; a project's Maintainers and a group's Owners register, enable, disable them and
    # reset the registration token; instance runners and every runner are administrators'.
    READ_RUNNERS = auto()
    ADMIN_RUNNERS = auto()
    ADMIN_INSTANCE_RUNNERS = auto()
    # CI/CD variables: a project's (Maintainer), a group's (Owner), the instance's (administrators).
    ADMIN_CI_VARIABLES = auto()
    # Pipelines (GitLab's read_pipeline, create_pipeline, update_pipeline, destroy_pipeline):
    # Reporters read them (Guests and anyone who sees the project too when its pipelines are
    # public), Developers create, retry and cancel them, Owners delete them.
    READ_PIPELINE = auto()
    CREATE_PIPELINE = auto()
    UPDATE_PIPELINE = auto()
    DESTROY_PIPELINE = auto()
    # Trigger tokens (GitLab's admin_build / manage_trigger): Maintainers. A schedule's rules
    # depend on its owner: may_admin_pipeline_schedule, may_update_pipeline_schedule.
    ADMIN_TRIGGERS = auto()
    # Commit statuses reported from outside (GitLab's create_commit_status): Developers.
    CREATE_COMMIT_STATUS = auto()
    # Jobs (GitLab's read_build, update_build, destroy_artifacts): read as pipelines are;
    # Developers retry, cancel, play and erase them (may_update_job for protected refs),
    # Maintainers delete their artifacts.
    READ_BUILD = auto()
    UPDATE_BUILD = auto()
    DESTROY_ARTIFACTS = auto()
    # Merge requests (GitLab's read_merge_request, admin_merge_request, destroy_merge_request):
    # the merge_requests feature open to the actor, and in a private project a Reporter
    # (Guests see those of public and internal projects); Reporters set labels, milestone,
    # assignees and reviewers and lock discussions; Owners delete. Who may update, merge and
    # approve one merge request: may_update_merge_request, may_merge, may_approve.
    READ_MERGE_REQUEST = auto()
    ADMIN_MERGE_REQUEST = auto()
    DESTROY_MERGE_REQUEST = auto()
    # A project's approval settings and approval rules (Maintainer).
    ADMIN_APPROVALS = auto()


@dataclass(slots=True, frozen=True)
class ProjectSubject:
    project: Project
    namespace: Namespace
    # The actor's effective access level (None: no membership reaches the project).
    level: int | None
    # Whether the actor already has a row (membership or access request); None until the
    # one action that needs it (REQUEST_ACCESS) looks it up.
    has_membership_row: bool | None = None


@dataclass(slots=True, frozen=True)
class GroupSubject:
    group: Namespace
    level: int | None
    # The actor belongs to something inside the group (a subgroup or a project).
    related: bool = False
    has_membership_row: bool | None = None  # as on ProjectSubject


@dataclass(slots=True, frozen=True)
class IssueSubject:
    """An issue the actor may read, with its project; `issue` is the model (writes change it)."""

    project: ProjectSubject
    issue: Issue
    assignee_ids: tuple[int, ...]


@dataclass(slots=True, frozen=True)
class MergeRequestSubject:
    """A merge request the actor may read, with its (target) project; `merge_request` is the
    model (writes change it)."""

    project: ProjectSubject
    merge_request: MergeRequest
    assignee_ids: tuple[int, ...]
    reviewer_ids: tuple[int, ...]


@dataclass(slots=True, frozen=True)
class EpicSubject:
    """An epic the actor may read, with its group; `epic` is the model (writes change it)."""

    group: GroupSubject
    epic: Epic


# What it takes to see a subject at all (below it, a refusal is a 404).
_READ_ACTION: dict[type, Action] = {ProjectSubject: Action.READ_PROJECT, GroupSubject: Action.READ_GROUP}

# Writes to a project's content or settings that an archived project refuses.
ARCHIVED_REFUSES = frozenset(
    {
        Action.UPDATE_PROJECT,
        Action.CHANGE_VISIBILITY,
        Action.UPLOAD_FILE,
        Action.PUSH_CODE,
        Action.ADMIN_PROTECTED_BRANCHES,
        Action.CREATE_ISSUE,
        Action.ADMIN_ISSUE,
        Action.DESTROY_ISSUE,
        Action.ADMIN_ISSUE_LINK,
        Action.ADMIN_LABELS,
        Action.ADMIN_MILESTONES,
        Action.ADMIN_BOARDS,
        Action.CREATE_PIPELINE,
        Action.UPDATE_PIPELINE,
        Action.CREATE_COMMIT_STATUS,
        Action.CREATE_MERGE_REQUEST_IN,
        Action.ADMIN_MERGE_REQUEST,
        Action.ADMIN_APPROVALS,
    }
)
_CREATION_LEVEL = {
    "noone": None,
    "administrator": None,
    "owner": OWNER,
    "maintainer": MAINTAINER,
    "developer": DEVELOPER,
}


def is_admin(actor: Actor | None) -> bool:
    return actor is not None and actor.is_admin


def may(actor: Actor | None, action: Action, subject: object = None) -> bool:
    if action is Action.ADMIN_USER_KEYS:
        return is_admin(actor)
    if action in (
        Action.ADMIN_USERS,
        Action.ADMIN_TOKENS,
        Action.ADMIN_CUSTOM_ATTRIBUTES,
        Action.ADMIN_PROJECTS,
    ):
        return is_admin(actor)
    if action is Action.ADMIN_FEATURES:
        return is_admin(actor)
    if action is Action.ADMIN_CI_VARIABLES and subject is None:
        return is_admin(actor)
    if action is Action.ADMIN_SETTINGS:
        return is_admin(actor)
    if action is Action.ADMIN_INSTANCE_RUNNERS:
        return is_admin(actor)
    if action is Action.CREATE_GROUP:
        return actor is not None and (is_admin(actor) or actor.user.can_create_group)
    if isinstance(subject, ProjectSubject):
        if _job_token_elsewhere(actor, subject.project.id) or _job_token_beyond(actor, action):
            actor, subject = None, replace(subject, level=None)
        return _may_project(actor, action, subject)
    if isinstance(subject, GroupSubject):
        if _job_token_elsewhere(actor, None):
            actor, subject = None, replace(subject, level=None, related=False)
        return _may_group(actor, action, subject)
    if isinstance(subject, (UserRow, User)):
        return _may_user(actor, action, subject)
    return False


# What a CI job token may do in its own project as its job's user, as GitLab allows it on
# few endpoints: read the project, clone it, read its pipelines, jobs and their artifacts.
# Anything else it may do only as an anonymous caller could (a public project's reads).
JOB_TOKEN_ACTIONS = frozenset(
    {Action.READ_PROJECT, Action.READ_CODE, Action.READ_PIPELINE, Action.READ_BUILD}
)


def _job_token_beyond(actor: Actor | None, action: Action) -> bool:
    return actor is not None and actor.via == "job_token" and action not in JOB_TOKEN_ACTIONS


def _job_token_elsewhere(actor: Actor | None, project_id: int | None) -> bool:
    """A CI job token reaches its job's project only (GitLab's default job token scope, named
    in its scopes by services.job_tokens); anywhere else its caller is anonymous."""
    if actor is None or actor.via != "job_token":
        return False
    return project_id is None or f"ci_job_project:{project_id}" not in (actor.scopes or ())


def _may_user(actor: Actor | None, action: Action, user: UserRow | User) -> bool:
    is_self = actor is not None and actor.user.id == user.id
    if action is Action.READ_USER:
        return not user.is_ghost or is_admin(actor)
    if action is Action.READ_USER_PROFILE:
        return is_self or sees_private_profiles(actor) or not user.private_profile
    if action in (Action.READ_USER_EMAIL, Action.UPDATE_USER_STATUS, Action.READ_USER_TOKENS):
        return is_self or is_admin(actor)
    if action is Action.REVOKE_TOKEN:
        return is_self or is_admin(actor)
    return False


def open_visibilities(actor: Actor | None) -> tuple[str, ...]:
    """The visibilities that open a project or group to the actor without any membership:
    public to all, internal too to signed-in users who are not external."""
    if actor is None or actor.user.external:
        return (PUBLIC,)
    return (PUBLIC, INTERNAL)


def _visible(actor: Actor | None, visibility: str) -> bool:
    return visibility in open_visibilities(actor)


def viewer_kind(actor: Actor | None) -> tuple[bool, bool, bool]:
    """Everything about a viewer that decisions on a project read besides their levels:
    viewers of one kind, at equal levels, are shown the same project record (what is kept
    across requests is kept per kind). Whatever else _may_project or open_features come to
    read of the actor belongs here too."""
    if actor is None:
        return (False, False, False)
    return (True, is_admin(actor), bool(actor.user.external))


def sees_private_profiles(actor: Actor | None) -> bool:
    """Whoever sees every user's profile, private ones included (each user sees their own)."""
    return is_admin(actor)


# The features whose `*_enabled` booleans the project view shows.
VIEW_FEATURES = ("issues", "merge_requests", "builds", "wiki", "snippets", "container_registry")


def open_features(actor: Actor | None, s: ProjectSubject) -> dict[str, bool]:
    """Which features the viewer may use, as the project view's `*_enabled` booleans say: not
    disabled, and enabled for all or the viewer a member (or an administrator)."""
    member = is_admin(actor) or (s.level or 0) >= GUEST
    out = {}
    for feature in VIEW_FEATURES:
        level = getattr(s.project, f"{feature}_access_level")
        out[feature] = level != DISABLED and (level == ENABLED or member)
    return out


def _feature_open(actor: Actor | None, s: ProjectSubject, feature: str) -> bool:
    """A project feature (its `<feature>_access_level`) open to the actor: not disabled, and
    enabled for all who see the project or the actor a member (or an administrator)."""
    level = getattr(s.project, f"{feature}_access_level")
    if level == DISABLED or not _may_project(actor, Action.READ_PROJECT, s):
        return False
    return level != FEATURE_PRIVATE or is_admin(actor) or (s.level or 0) >= GUEST


def _may_project(actor: Actor | None, action: Action, s: ProjectSubject) -> bool:
    level = s.level or 0
    admin = is_admin(actor)
    if action in ARCHIVED_REFUSES and s.project.archived:
        return False
    if action is Action.READ_PROJECT or action is Action.READ_MEMBERS:
        return admin or level >= GUEST or _visible(actor, s.project.visibility)
    if action is Action.READ_ISSUE:
        if s.project.issues_access_level == DISABLED or not _may_project(actor, Action.READ_PROJECT, s):
            return False
        return s.project.issues_access_level != FEATURE_PRIVATE or admin or level >= GUEST
    if action is Action.READ_MERGE_REQUEST:
        if not _feature_open(actor, s, "merge_requests"):
            return False
        # A members-only feature or a private project: Reporters and up (GitLab's
        # PRIVATE_FEATURES_MIN_ACCESS_LEVEL for merge requests), never Guests.
        if admin or level >= REPORTER:
            return True
        return s.project.visibility != PRIVATE and s.project.merge_requests_access_level != FEATURE_PRIVATE
    if action is Action.READ_MILESTONE:
        return _may_project(actor, Action.READ_ISSUE, s) or _feature_open(actor, s, "merge_requests")
    if action is Action.READ_CODE:
        # Guests of a private project see no code; on public and internal projects they do.
        if s.project.repository_access_level == DISABLED:
            return False
        if admin or level >= REPORTER:
            return True
        return (
            s.project.repository_access_level == ENABLED
            and s.project.visibility != PRIVATE
            and _may_project(actor, Action.READ_PROJECT, s)
        )
    if action is Action.READ_PIPELINE:
        return may_read_pipelines(actor, s)
    if action is Action.READ_BUILD:
        return may_read_pipelines(actor, s)
    if actor is None:
        return False
    if action is Action.FORK_PROJECT:
        return s.project.forking_access_level != DISABLED and _may_project(actor, Action.READ_CODE, s)
    if action in (Action.STAR_PROJECT, Action.UPLOAD_FILE):
        return _may_project(actor, Action.READ_PROJECT, s)
    if action is Action.PUSH_CODE:
        return (admin or level >= DEVELOPER) and s.project.repository_access_level != DISABLED
    if action is Action.READ_PROJECT_SETTINGS:
        return admin or level >= MAINTAINER
    if action is Action.CREATE_MERGE_REQUEST_IN:
        return _may_project(actor, Action.READ_MERGE_REQUEST, s) and _may_project(actor, Action.READ_CODE, s)
    if action is Action.ADMIN_MERGE_REQUEST:
        return _may_project(actor, Action.READ_MERGE_REQUEST, s) and (admin or level >= REPORTER)
    if action is Action.DESTROY_MERGE_REQUEST:
        return admin or level >= OWNER
    if action is Action.ADMIN_APPROVALS:
        return admin or level >= MAINTAINER
    if action is Action.ADMIN_BADGES:  # GitLab's admin_project
        return admin or level >= MAINTAINER
    if action in (Action.READ_RUNNERS, Action.ADMIN_RUNNERS):
        return admin or level >= MAINTAINER
    if action is Action.ADMIN_CI_VARIABLES:  # GitLab's admin_cicd_variables
        return admin or level >= MAINTAINER
    if action in (Action.CREATE_PIPELINE, Action.UPDATE_PIPELINE):
        return _may_project(actor, Action.READ_PIPELINE, s) and (admin or level >= DEVELOPER)
    if action is Action.DESTROY_PIPELINE:
        return _may_project(actor, Action.READ_PIPELINE, s) and (admin or level >= OWNER)
    if action is Action.ADMIN_TRIGGERS:
        return _may_project(actor, Action.READ_PIPELINE, s) and (admin or level >= MAINTAINER)
    if action is Action.CREATE_COMMIT_STATUS:
        return admin or level >= DEVELOPER
    if action is Action.UPDATE_BUILD:
        return (
            not s.project.archived
            and _may_project(actor, Action.READ_BUILD, s)
            and (admin or level >= DEVELOPER)
        )
    if action is Action.DESTROY_ARTIFACTS:
        return _may_project(actor, Action.READ_BUILD, s) and (admin or level >= MAINTAINER)
    if action is Action.CREATE_ISSUE:
        return _may_project(actor, Action.READ_ISSUE, s)
    if action in (Action.ADMIN_ISSUE, Action.ADMIN_LABELS, Action.ADMIN_BOARDS):
        return _may_project(actor, Action.READ_ISSUE, s) and (admin or level >= REPORTER)
    if action is Action.ADMIN_MILESTONES:  # GitLab's admin_milestone: wherever milestones are read
        return _may_project(actor, Action.READ_MILESTONE, s) and (admin or level >= REPORTER)
    if action is Action.DESTROY_ISSUE:
        return admin or level >= OWNER
    if action is Action.ADMIN_ISSUE_LINK:  # GitLab's admin_issue_link: Guests and up
        return _may_project(actor, Action.READ_ISSUE, s) and (admin or level >= GUEST)
    if action in (
        Action.UPDATE_PROJECT,
        Action.SHARE_PROJECT,
        Action.ADMIN_MEMBERS,
        Action.ADMIN_PROTECTED_BRANCHES,
        Action.MAINTAIN_REPOSITORY,
    ):
        return admin or level >= MAINTAINER
    if action in (
        Action.CHANGE_VISIBILITY,
        Action.ADMIN_PROJECT,
        Action.MANAGE_OWNERS,
        Action.TRANSFER_PROJECT,
    ):
        return admin or level >= OWNER
    if action is Action.REQUEST_ACCESS:
        return (
            s.project.request_access_enabled
            and s.has_membership_row is False
            and s.level is None
            and _may_project(actor, Action.READ_PROJECT, s)
        )
    return False


def may_read_pipelines(actor: Actor | None, s: ProjectSubject) -> bool:
    """A project's pipelines: its CI feature open to the actor, and the actor a Reporter or up,
    or the project's pipelines public (`public_jobs`) to whoever sees the project."""
    if s.project.builds_access_level == DISABLED or not _may_project(actor, Action.READ_PROJECT, s):
        return False
    if is_admin(actor) or (s.level or 0) >= REPORTER:
        return True
    return s.project.public_jobs and _feature_open(actor, s, "builds")


def may_update_job(actor: Actor | None, s: ProjectSubject, protection: tuple[int | None, ...] | None) -> bool:
    """Retry, cancel or play a job (GitLab's update_build): Developers and up; a job of a
    protected branch only for those who may push or merge to it (`protection`: the branch
    rule's push and merge levels; None when the branch is not protected)."""
    if not may(actor, Action.UPDATE_BUILD, s):
        return False
    return protection is None or any(may_push_to(actor, s, level) for level in protection)


def may_force_cancel_job(
    actor: Actor | None, s: ProjectSubject, protection: tuple[int | None, ...] | None
) -> bool:
    """End a job stuck in `canceling` at once (GitLab's cancel with `force`): Maintainers who
    may update it."""
    if actor is None or not may_update_job(actor, s, protection):
        return False
    return is_admin(actor) or (s.level or 0) >= MAINTAINER


def may_erase_job(
    actor: Actor | None, s: ProjectSubject, protection: tuple[int | None, ...] | None, job_user_id: int | None
) -> bool:
    """Erase a job's log and artifacts (GitLab's erase_build): Maintainers, and the job's own
    user where they may update it on an unprotected ref."""
    if not may(actor, Action.UPDATE_BUILD, s) or actor is None:
        return False
    if is_admin(actor) or (s.level or 0) >= MAINTAINER:
        return True
    return protection is None and actor.user.id == job_user_id and may_update_job(actor, s, None)


def may_read_pipeline_variables(actor: Actor | None, s: ProjectSubject, pipeline_user_id: int | None) -> bool:
    """A pipeline's variables with their values (GitLab's read_pipeline_variable): Developers
    and up, administrators, and the user who ran the pipeline."""
    if actor is None:
        return False
    return is_admin(actor) or (s.level or 0) >= DEVELOPER or actor.id == pipeline_user_id


def may_admin_pipeline_schedule(actor: Actor | None, s: ProjectSubject, owner_id: int | None) -> bool:
    """Deleting a schedule, taking it over, reading its variables (GitLab's
    admin_pipeline_schedule): Maintainers, and its owner while a Developer or up."""
    if actor is None or not may(actor, Action.UPDATE_PIPELINE, s):
        return False
    return is_admin(actor) or (s.level or 0) >= MAINTAINER or actor.user.id == owner_id


def may_update_pipeline_schedule(actor: Actor | None, s: ProjectSubject, owner_id: int | None) -> bool:
    """Changing a schedule or its variables (GitLab's update_pipeline_schedule): its owner
    while a Developer or up, and administrators; a Maintainer takes it over first."""
    if actor is None or not may(actor, Action.UPDATE_PIPELINE, s):
        return False
    return is_admin(actor) or actor.user.id == owner_id


def may_admin_trigger(actor: Actor | None, s: ProjectSubject, owner_id: int | None) -> bool:
    """Changing a trigger token and seeing it whole (GitLab's admin_trigger): its owner while
    a Maintainer or up."""
    return actor is not None and actor.user.id == owner_id and may(actor, Action.ADMIN_TRIGGERS, s)


def _may_group(actor: Actor | None, action: Action, s: GroupSubject) -> bool:
    level = s.level or 0
    admin = is_admin(actor)
    if action is Action.READ_GROUP or action is Action.READ_MEMBERS or action is Action.READ_EPIC:
        return admin or level >= GUEST or s.related or _visible(actor, s.group.visibility)
    if actor is None:
        return False
    if action in (Action.CREATE_EPIC, Action.ADMIN_LABELS, Action.ADMIN_MILESTONES, Action.ADMIN_BOARDS):
        return admin or level >= REPORTER
    if action is Action.DESTROY_EPIC:
        return admin or level >= OWNER
    if action in (Action.UPDATE_GROUP, Action.ADMIN_MEMBERS, Action.MANAGE_OWNERS):
        # Group membership is the Owners' business (GitLab's admin_group_member).
        return admin or level >= OWNER
    if action is Action.ADMIN_BADGES:  # GitLab's admin_group
        return admin or level >= OWNER
    if action is Action.READ_RUNNERS:
        return admin or level >= MAINTAINER
    if action is Action.ADMIN_RUNNERS:
        return admin or level >= OWNER
    if action is Action.ADMIN_CI_VARIABLES:  # GitLab's admin_cicd_variables on a group
        return admin or level >= OWNER
    if action is Action.CREATE_SUBGROUP:
        wanted = OWNER if s.group.subgroup_creation_level == "owner" else MAINTAINER
        return admin or level >= wanted
    if action is Action.READ_NAMESPACE:
        if s.group.is_group:
            return _may_group(actor, Action.READ_GROUP, s)
        return admin or s.group.owner_id == actor.user.id
    if action is Action.CREATE_PROJECT:
        if not s.group.is_group:
            return admin or s.group.owner_id == actor.user.id
        wanted = _CREATION_LEVEL.get(s.group.project_creation_level, DEVELOPER)
        return admin or (wanted is not None and level >= wanted)
    if action is Action.TRANSFER_PROJECTS_INTO:
        # GitLab's transfer_projects: who may create projects there, and in a group a Maintainer.
        if not _may_group(actor, Action.CREATE_PROJECT, s):
            return False
        return admin or not s.group.is_group or level >= MAINTAINER
    if action is Action.REQUEST_ACCESS:
        return (
            s.group.request_access_enabled
            and s.has_membership_row is False
            and s.level is None
            and _may_group(actor, Action.READ_GROUP, s)
        )
    return False


# The level from which confidential issues and epics (and internal notes) are read; the
# queries that say may_read_issue in SQL compare levels with it.
CONFIDENTIAL_LEVEL = REPORTER


def sees_confidential(actor: Actor | None, s: ProjectSubject | GroupSubject) -> bool:
    """Confidential issues (of a project) and epics (of a group) are open to Reporters and up
    and administrators; others see only those they wrote or are assigned (may_read_issue)."""
    return is_admin(actor) or (s.level or 0) >= CONFIDENTIAL_LEVEL


def may_read_issue(
    actor: Actor | None,
    s: ProjectSubject,
    confidential: bool,
    author_id: int | None,
    assignee_ids: Iterable[int],
) -> bool:
    """One issue: the project's issues open to the actor, and a confidential one only to those
    who see confidential issues, its author and its assignees."""
    if not may(actor, Action.READ_ISSUE, s):
        return False
    if not confidential or sees_confidential(actor, s):
        return True
    return actor is not None and (actor.user.id == author_id or actor.user.id in set(assignee_ids))


def may_update_issue(
    actor: Actor | None, s: ProjectSubject, author_id: int | None, assignee_ids: Iterable[int]
) -> bool:
    """Title, description, state and the like: Reporters and up, the author, an assignee
    (GitLab's update_issue); archived projects refuse all."""
    if actor is None or s.project.archived or not may(actor, Action.CREATE_ISSUE, s):
        return False
    if may(actor, Action.ADMIN_ISSUE, s):
        return True
    return actor.user.id == author_id or actor.user.id in set(assignee_ids)


def may_comment(
    actor: Actor | None,
    s: ProjectSubject | GroupSubject,
    discussion_locked: bool,
    *,
    reads: Action = Action.READ_ISSUE,
) -> bool:
    """A note on an issue, epic or merge request (`reads`: what reading it takes) the actor can
    read: anyone signed in, but a locked discussion takes a Reporter (GitLab's create_note on
    a locked issuable)."""
    if actor is None:
        return False
    if isinstance(s, ProjectSubject) and (s.project.archived or not may(actor, reads, s)):
        return False
    return not discussion_locked or sees_confidential(actor, s)


def may_admin_note(actor: Actor | None, s: ProjectSubject | GroupSubject, note_author_id: int | None) -> bool:
    """Changing or deleting a note: its author, or a Maintainer (group: Owner) and administrators."""
    if actor is None:
        return False
    if actor.user.id == note_author_id or is_admin(actor):
        return True
    wanted = MAINTAINER if isinstance(s, ProjectSubject) else OWNER
    return (s.level or 0) >= wanted


def may_backdate(actor: Actor | None, s: ProjectSubject | GroupSubject) -> bool:
    """Times and iids given by the caller (imports: an issue's, epic's or note's created_at,
    updated_at, iid): administrators and Owners."""
    return is_admin(actor) or (actor is not None and (s.level or 0) >= OWNER)


def may_resolve_note(
    actor: Actor | None, s: ProjectSubject | GroupSubject, noteable_author_id: int | None
) -> bool:
    """Resolving a resolvable thread: the noteable's author, Developers and up, administrators."""
    if actor is None:
        return False
    return actor.user.id == noteable_author_id or is_admin(actor) or (s.level or 0) >= DEVELOPER


def may_award(
    actor: Actor | None, s: ProjectSubject | GroupSubject, *, reads: Action = Action.READ_ISSUE
) -> bool:
    """An emoji reaction on something the actor can read: anyone signed in (an archived
    project's issues and merge requests take none)."""
    return may_comment(actor, s, discussion_locked=False, reads=reads)


def may_revoke_award(actor: Actor | None, awarder_id: int) -> bool:
    """Removing an emoji reaction: whoever gave it, and administrators."""
    return actor is not None and (actor.user.id == awarder_id or is_admin(actor))


def may_mention_all(actor: Actor | None, s: ProjectSubject) -> bool:
    """`@all` names every member of the project: its members' to use (GitLab ignores it from others)."""
    return actor is not None and (s.level or 0) >= GUEST


def may_update_merge_request(
    actor: Actor | None, s: ProjectSubject, author_id: int | None, assignee_ids: Iterable[int]
) -> bool:
    """Title, description, branches, state and the like (GitLab's update_merge_request):
    Developers and up, the author, an assignee; archived projects refuse all."""
    if actor is None or s.project.archived or not may(actor, Action.READ_MERGE_REQUEST, s):
        return False
    if is_admin(actor) or (s.level or 0) >= DEVELOPER:
        return True
    return actor.user.id == author_id or actor.user.id in set(assignee_ids)


def may_merge(actor: Actor | None, s: ProjectSubject, rule_merge_level: int | None) -> bool:
    """Merging into the target branch (GitLab's accept_merge_request): Developers, or the
    branch's protection when it has one (`rule_merge_level`: 0 no one, 30 Developers,
    40 Maintainers, 60 administrators)."""
    if actor is None or s.project.archived or not may(actor, Action.READ_MERGE_REQUEST, s):
        return False
    if rule_merge_level is None:
        return is_admin(actor) or (s.level or 0) >= DEVELOPER
    if rule_merge_level == 0:
        return False
    if rule_merge_level >= 60:
        return is_admin(actor)
    return is_admin(actor) or (s.level or 0) >= rule_merge_level


def may_approve(
    actor: Actor | None, s: ProjectSubject, author_id: int | None, assignee_ids: Iterable[int]
) -> bool:
    """Approving or unapproving (GitLab's approve_merge_request): whoever may update the merge
    request and is a member of its project (or an administrator). Whether an author or a
    committer may approve is the project's approval setting, applied by the service."""
    if not may_update_merge_request(actor, s, author_id, assignee_ids):
        return False
    return is_admin(actor) or (s.level or 0) >= GUEST


def may_override_approvers(
    actor: Actor | None, s: ProjectSubject, author_id: int | None, assignee_ids: Iterable[int]
) -> bool:
    """A merge request's own approval rules and approvers (GitLab's update_approvers): whoever
    may update it, unless the project keeps its rules (disable_overriding_approvers_per_merge_request)."""
    if s.project.disable_overriding_approvers_per_merge_request:
        return False
    return may_update_merge_request(actor, s, author_id, assignee_ids)


def authors_may_approve(project: Project, instance_prevents: bool) -> bool:
    """An author approving their own merge request: refused where the project's
    merge_requests_author_approval is true (the spec's meaning) or the instance prevents it."""
    return not (project.merge_requests_author_approval or instance_prevents)


def committers_may_approve(project: Project, instance_prevents: bool) -> bool:
    """A user who committed to a merge request approving it: refused where the project's
    merge_requests_disable_committers_approval is on or the instance prevents it."""
    return not (project.merge_requests_disable_committers_approval or instance_prevents)


def may_create_merge_request(actor: Actor | None, source: ProjectSubject, target: ProjectSubject) -> bool:
    """A merge request from a branch of `source` into `target` (the same project, or its fork's
    upstream): push access to the source (create_merge_request_from) and
    CREATE_MERGE_REQUEST_IN on the target."""
    return (
        may(actor, Action.PUSH_CODE, source)
        and not source.project.archived
        and may(actor, Action.CREATE_MERGE_REQUEST_IN, target)
    )


def may_read_epic(actor: Actor | None, s: GroupSubject, confidential: bool, author_id: int | None) -> bool:
    """An epic of a group the actor sees; a confidential one only to Reporters and up and its author."""
    if not may(actor, Action.READ_EPIC, s):
        return False
    return (
        not confidential or sees_confidential(actor, s) or (actor is not None and actor.user.id == author_id)
    )


def may_push_to(
    actor: Actor | None,
    s: ProjectSubject,
    rule_push_level: int | None,
    *,
    force: bool = False,
    allow_force: bool = False,
) -> bool:
    """A push or edit of one branch: PUSH_CODE, then the branch's protection if it has one
    (`rule_push_level`: 0 no one, 30 Developers, 40 Maintainers, 60 administrators)."""
    if not may(actor, Action.PUSH_CODE, s):
        return False
    if rule_push_level is None:
        return True
    if force and not allow_force:
        return False
    if rule_push_level == 0:
        return False
    if rule_push_level >= 60:
        return is_admin(actor)
    return is_admin(actor) or (s.level or 0) >= rule_push_level


def may_unprotect(actor: Actor | None, s: ProjectSubject, unprotect_level: int | None) -> bool:
    """Changing or removing a protected-branch rule: Maintainers, unless the rule's unprotect
    level asks for more (60: administrators only)."""
    if not may(actor, Action.ADMIN_PROTECTED_BRANCHES, s):
        return False
    if is_admin(actor):
        return True
    wanted = unprotect_level or MAINTAINER
    return wanted < 60 and (s.level or 0) >= wanted


def may_grant(actor: Actor | None, s: ProjectSubject | GroupSubject, level: int) -> bool:
    """Giving a role to a member (ADMIN_MEMBERS already allowed): the Owner role is the
    Owners' (and administrators') to give."""
    return level < OWNER or may(actor, Action.MANAGE_OWNERS, s)


def may_change_member(
    actor: Actor | None, s: ProjectSubject | GroupSubject, current_level: int, new_level: int | None
) -> bool:
    """Changing (`new_level`) or removing (None) a membership: an Owner's membership, and a
    change to Owner, are the Owners' business."""
    return may_grant(actor, s, current_level) and (new_level is None or may_grant(actor, s, new_level))


def may_share_at(actor: Actor | None, s: ProjectSubject, group_access: int) -> bool:
    """Sharing a project (SHARE_PROJECT already allowed) at the Owner level takes an Owner."""
    return group_access < OWNER or may(actor, Action.ADMIN_PROJECT, s)


def may_use_visibility(actor: Actor | None, visibility: str, restricted: Container[str]) -> bool:
    """The instance's restricted visibility levels bind everyone but administrators."""
    return visibility not in restricted or is_admin(actor)


def exceeds(visibility: str, ceiling: str) -> bool:
    """A visibility wider than `ceiling` (a group's, a fork source's): not allowed below it."""
    return VISIBILITY_LEVEL[visibility] > VISIBILITY_LEVEL[ceiling]


def capped(visibility: str, ceiling: str) -> str:
    """`visibility`, lowered to `ceiling` where it is wider."""
    return ceiling if exceeds(visibility, ceiling) else visibility


def may_create_projects(user: UserRow | User) -> bool:
    """The user view's can_create_project: a projects limit above 0, and not an external user."""
    return bool(user.projects_limit > 0 and not user.external)


def counts_toward_projects_limit(actor: Actor | None, namespace: Namespace) -> bool:
    """A user's projects_limit caps personal projects created by non-administrators."""
    return not namespace.is_group and not is_admin(actor)


def may_scrape(address: str | None, allowed: Iterable[IPv4Network | IPv6Network]) -> bool:
    """GitLab's monitoring allowlist for /-/metrics: the client's address is in one of the
    `allowed` networks. A Unix socket (no address) is this machine; a client address that
    is no IP address is nobody's."""
    if address is None:
        return True
    try:
        ip = ip_address(address)
    except ValueError:
        return False
    mapped = ip.ipv4_mapped if isinstance(ip, IPv6Address) else None
    return any(ip in network or (mapped is not None and mapped in network) for network in allowed)


def require(actor: Actor | None, action: Action, subject: object = None) -> None:
    if not may(actor, action, subject):
        raise Forbidden()


# Refusals GitLab answers with its bare 404 although the actor may see the subject (a failed
# ability check followed by `not_found!`).
_REFUSED_AS_NOT_FOUND = frozenset({Action.FORK_PROJECT})


def authorize(actor: Actor | None, action: Action, subject: object, what: str) -> None:
    """The answer to `action` on a subject: 404 (`what` not found) when the actor may not even
    read the subject, so a hidden one is never confirmed; 403 when they may read it but not
    do `action` (a bare 404 for the few actions GitLab answers so)."""
    read = _READ_ACTION.get(type(subject), Action.READ_USER)
    if not may(actor, read, subject):
        raise NotFound(what)
    if action is not read and not may(actor, action, subject):
        raise NotFound() if action in _REFUSED_AS_NOT_FOUND else Forbidden()


def require_visible(actor: Actor | None, action: Action, subject: object, what: str) -> None:
    """Like require, but the subject is hidden: refusal is its 404."""
    if not may(actor, action, subject):
        raise NotFound(what)


# A runner belongs to those who hold these levels on one of its projects (a project runner)
# or on its group (a group runner): the lists and the single-runner checks below read them.
RUNNER_PROJECT_LEVEL = MAINTAINER
RUNNER_GROUP_READ_LEVEL = MAINTAINER
RUNNER_GROUP_ADMIN_LEVEL = OWNER
# A runner's jobs are listed in the projects where the caller is at least a Reporter.
RUNNER_JOBS_LEVEL = REPORTER


def may_read_runner(
    actor: Actor | None, runner_type: str, project_level: int | None, group_level: int | None
) -> bool:
    """A runner's detail: any signed-in user's for an instance runner (GitLab shows them to
    all); a project runner's Maintainers of one of its projects; a group runner's group
    Maintainers. `project_level`: the actor's highest level on the runner's projects."""
    if actor is None:
        return False
    if is_admin(actor) or runner_type == "instance_type":
        return True
    if runner_type == "group_type":
        return (group_level or 0) >= RUNNER_GROUP_READ_LEVEL
    return (project_level or 0) >= RUNNER_PROJECT_LEVEL


def may_admin_runner(
    actor: Actor | None, runner_type: str, project_level: int | None, group_level: int | None
) -> bool:
    """Change, remove, reset the token of, list the jobs of, or enable elsewhere a runner:
    administrators; a project runner's Maintainers; a group runner's group Owners."""
    if actor is None:
        return False
    if is_admin(actor):
        return True
    if runner_type == "group_type":
        return (group_level or 0) >= RUNNER_GROUP_ADMIN_LEVEL
    if runner_type == "project_type":
        return (project_level or 0) >= RUNNER_PROJECT_LEVEL
    return False


def may_enable_runner(actor: Actor | None, locked: bool, manages: bool) -> bool:
    """Let a project runner serve one more project: administrators; others only a runner they
    manage (`may_admin_runner`) that is not locked to its projects."""
    return actor is not None and (is_admin(actor) or (manages and not locked))


def may_delete_runner(actor: Actor | None, project_count: int, manages: bool) -> bool:
    """Remove a runner the caller manages; one that serves several projects, administrators
    only (the others disable it in their project)."""
    return actor is not None and manages and (is_admin(actor) or project_count <= 1)
