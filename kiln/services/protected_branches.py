"""Protected branch rules: who may push, merge and unprotect a branch name or wildcard
pattern (`release/*`). Reading them needs access to the code, changing them the
Maintainer role (and the rule's own unprotect level)."""

from __future__ import annotations

import fnmatch
from datetime import datetime
from typing import Literal

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import Conflict, Forbidden, NotFound, ValidationFailed
from kiln.models import ProtectedBranch
from kiln.models.repository import MAINTAINER_ACCESS
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.preconditions import require_unmodified_since
from kiln.queries import protected_branches as finder
from kiln.queries.protected_branches import ProtectedBranchRow
from kiln.schemas.protected_branches import ProtectedBranchCreate, ProtectedBranchList, ProtectedBranchUpdate
from kiln.services import subjects

# GitLab answers a missing rule through ActiveRecord's RecordNotFound, with a lower-case "found".
RULE_NOT_FOUND = "404 Not found"
KINDS: tuple[Literal["push", "merge", "unprotect"], ...] = ("push", "merge", "unprotect")


# ----------------------------------------------------------------------------- matching


def rules_of(db: Session, project_id: int) -> list[ProtectedBranchRow]:
    """All rules of a project in one statement, for matching many branches in memory."""
    return finder.rules_of(db, project_id)


def _matches(rule: ProtectedBranchRow, branch: str) -> bool:
    return rule.name == branch or ("*" in rule.name and fnmatch.fnmatchcase(branch, rule.name))


def matching(rules: list[ProtectedBranchRow], branch: str) -> list[ProtectedBranchRow]:
    return [r for r in rules if _matches(r, branch)]


def governing(rules: list[ProtectedBranchRow], branch: str) -> ProtectedBranchRow | None:
    """The rule that decides pushes to `branch`: an exact name wins over a wildcard pattern,
    then the oldest matching rule."""
    exact = next((rule for rule in rules if rule.name == branch), None)
    return exact or next((rule for rule in rules if _matches(rule, branch)), None)


# ----------------------------------------------------------------------------- reading


def _readable(db: Session, actor: Actor | None, ident: str) -> ProjectSubject:
    return subjects.project(db, actor, ident, Action.READ_CODE, rows=True)


def list_rules(
    db: Session, actor: Actor | None, ident: str, q: ProtectedBranchList, page: Page
) -> PageResult:
    """Items are ProtectedBranchRow records."""
    s = _readable(db, actor, ident)
    return finder.page_of_rules(db, s.project.id, q.search, page)


def _find(db: Session, project_id: int, name: str) -> ProtectedBranch:
    """The rule a write changes."""
    rule = db.scalars(
        select(ProtectedBranch).where(ProtectedBranch.project_id == project_id, ProtectedBranch.name == name)
    ).first()
    if rule is None:
        raise NotFound(message=RULE_NOT_FOUND)
    return rule


def get_rule(db: Session, actor: Actor | None, ident: str, name: str) -> ProtectedBranchRow:
    s = _readable(db, actor, ident)
    return _row(db, s.project.id, name)


def _row(db: Session, project_id: int, name: str) -> ProtectedBranchRow:
    """The rule as every view renders it: what a read finds, and what a write answers once
    its transaction is over."""
    rule = finder.rule_by_name(db, project_id, name)
    if rule is None:  # a write's rule may have been removed since
        raise NotFound(message=RULE_NOT_FOUND)
    return rule


# ----------------------------------------------------------------------------- changing


def create_rule(db: Session, actor: Actor, ident: str, p: ProtectedBranchCreate) -> ProtectedBranchRow:
    s = subjects.project(db, actor, ident, Action.ADMIN_PROTECTED_BRANCHES)
    name = p.name.strip()
    if not name:
        raise ValidationFailed({"name": ["can't be blank"]}, status=422)
    conflict = Conflict(f"Protected branch '{name}' already exists")
    with transaction(db):
        exists = db.scalars(
            select(ProtectedBranch.id).where(
                ProtectedBranch.project_id == s.project.id, ProtectedBranch.name == name
            )
        ).first()
        if exists is not None:
            raise conflict
        rule = ProtectedBranch(
            project_id=s.project.id,
            name=name,
            push_access_level=_or(p.level("push"), MAINTAINER_ACCESS),
            merge_access_level=_or(p.level("merge"), MAINTAINER_ACCESS),
            unprotect_access_level=_or(p.level("unprotect"), MAINTAINER_ACCESS),
            allow_force_push=p.allow_force_push,
            code_owner_approval_required=bool(p.code_owner_approval_required),
        )
        db.add(rule)
        try:
            db.flush()
        except IntegrityError:  # a twin request protected the same name first
            raise conflict from None
    return _row(db, s.project.id, name)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def update_rule(
    db: Session, actor: Actor, ident: str, name: str, p: ProtectedBranchUpdate
) -> ProtectedBranchRow:
    s = subjects.project(db, actor, ident)
    with transaction(db):
        rule = _find(db, s.project.id, name)
        if not policy.may_unprotect(actor, s, rule.unprotect_access_level):
            raise Forbidden()
        given = p.given()
        if p.allow_force_push is not None:
            rule.allow_force_push = p.allow_force_push
        if p.code_owner_approval_required is not None:
            rule.code_owner_approval_required = p.code_owner_approval_required
        for kind in KINDS:
            if f"{kind}_access_level" in given or f"allowed_to_{kind}" in given:
                level = p.level(kind)
                if level is not None:
                    setattr(rule, f"{kind}_access_level", level)
        db.flush()
    return _row(db, s.project.id, rule.name)


def delete_rule(
    db: Session, actor: Actor, ident: str, name: str, unmodified_since: datetime | None = None
) -> None:
    s = subjects.project(db, actor, ident)
    with transaction(db):
        rule = _find(db, s.project.id, name)
        if not policy.may_unprotect(actor, s, rule.unprotect_access_level):
            raise Forbidden()
        require_unmodified_since(rule.updated_at, unmodified_since)
        db.delete(rule)
