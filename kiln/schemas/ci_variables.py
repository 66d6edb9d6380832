"""Request contracts for CI/CD variables (GitLab's lib/api/ci/variables.rb,
lib/api/group_variables.rb and lib/api/admin/ci/variables.rb parameters): the same fields under
/projects/:id, /groups/:id and /admin/ci, the instance's without an environment scope and
without hiding."""

from __future__ import annotations

from typing import ClassVar, Literal

from kiln.schemas._types import Flag, PageParams, Params

VariableType = Literal["env_var", "file"]


class VariableFilter(Params):
    """`filter[environment_scope]=…`: which of a key's variables is meant."""

    environment_scope: str | None = None


class VariableList(PageParams):
    id: str


class InstanceVariableList(PageParams):
    pass


class VariableGet(Params):
    id: str
    key: str
    filter: VariableFilter | None = None


class InstanceVariableGet(Params):
    key: str


class _Fields(Params):
    """What every level's variable takes."""

    protected: Flag | None = None
    masked: Flag | None = None
    raw: Flag | None = None
    variable_type: VariableType | None = None
    description: str | None = None


class InstanceVariableCreate(_Fields):
    key: str
    value: str


class InstanceVariableUpdate(_Fields):
    key: str
    value: str | None = None
    # An explicit null clears the description.
    keep_null: ClassVar[frozenset[str]] = frozenset({"description"})


class VariableCreate(_Fields):
    id: str
    key: str
    value: str
    environment_scope: str | None = None
    # Masked, and its value never shown again (project and group variables).
    masked_and_hidden: Flag | None = None


class VariableUpdate(_Fields):
    id: str
    key: str
    value: str | None = None
    environment_scope: str | None = None
    filter: VariableFilter | None = None
    keep_null: ClassVar[frozenset[str]] = frozenset({"description"})
