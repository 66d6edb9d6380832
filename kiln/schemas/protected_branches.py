"""Request contracts for protected branches (GitLab's lib/api/protected_branches.rb
parameters)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from kiln.schemas._types import Flag, Int, PageParams, Params, SearchText


def _numeric(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return value


# Who may push or merge: no one, Developers + Maintainers, Maintainers, administrators.
PushLevel = Annotated[Literal[0, 30, 40, 60], BeforeValidator(_numeric)]
# Unprotecting always needs someone.
UnprotectLevel = Annotated[Literal[30, 40, 60], BeforeValidator(_numeric)]


class AccessEntry(Params):
    """One `allowed_to_push[]`-style entry; kiln keeps a role level per kind, so user, group
    and deploy-key entries are accepted and not stored."""

    access_level: PushLevel | None = None
    user_id: Int | None = None
    group_id: Int | None = None
    deploy_key_id: Int | None = None
    id: Int | None = None
    destroy: Flag = Field(default=False, alias="_destroy")


class _RuleFields(Params):
    push_access_level: PushLevel | None = None
    merge_access_level: PushLevel | None = None
    unprotect_access_level: UnprotectLevel | None = None
    code_owner_approval_required: Flag | None = None
    allowed_to_push: list[AccessEntry] | None = None
    allowed_to_merge: list[AccessEntry] | None = None
    allowed_to_unprotect: list[AccessEntry] | None = None

    def level(self, kind: Literal["push", "merge", "unprotect"]) -> int | None:
        """The level asked for one kind: the plain parameter, else the last role entry."""
        plain: int | None = getattr(self, f"{kind}_access_level")
        if plain is not None:
            return plain
        entries: list[AccessEntry] = getattr(self, f"allowed_to_{kind}") or []
        levels = [e.access_level for e in entries if e.access_level is not None and not e.destroy]
        if kind == "unprotect":
            levels = [lv for lv in levels if lv != 0]
        return levels[-1] if levels else None


class ProtectedBranchList(PageParams):
    id: str
    search: SearchText | None = None


class ProtectedBranchGet(Params):
    id: str
    name: str


class ProtectedBranchCreate(_RuleFields):
    id: str
    name: str
    allow_force_push: Flag = False


class ProtectedBranchUpdate(_RuleFields):
    id: str
    name: str
    allow_force_push: Flag | None = None
