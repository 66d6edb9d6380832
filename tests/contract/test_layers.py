"""The layering of DESIGN.md as a check: api -> services -> queries/policy -> models and git."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KILN = Path(__file__).resolve().parents[2] / "kiln"


def imports_of(path: Path, *, type_checking: bool = False) -> set[str]:
    """Runtime imports; those under `if TYPE_CHECKING:` only name types (counted too with
    `type_checking`)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (
            not type_checking
            and isinstance(node, ast.If)
            and getattr(node.test, "id", None) == "TYPE_CHECKING"
        ):
            node.body = []
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def modules(package: str) -> list[Path]:
    return sorted((KILN / package).rglob("*.py"))


@pytest.mark.parametrize("package", ["services", "queries", "models", "entities", "schemas", "auth"])
def test_lower_layers_never_import_the_http_layer(package):
    offenders = {
        str(p.relative_to(KILN)): sorted(m for m in imports_of(p) if m.startswith(("kiln.api", "litestar")))
        for p in modules(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_routers_run_no_sql():
    """Routers parse, call one service and render: SQL lives in services and queries."""
    allowed = {"_deps.py"}  # the session dependency names the Session type
    offenders = {
        p.name: sorted(
            m for m in imports_of(p) if m.startswith(("sqlalchemy", "kiln.models", "kiln.queries"))
        )
        for p in modules("api")
        if p.name not in allowed
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_models_import_no_service_or_query():
    offenders = {
        p.name: sorted(
            m for m in imports_of(p) if m.startswith(("kiln.services", "kiln.queries", "kiln.policy"))
        )
        for p in modules("models")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_entities_never_query():
    offenders = {
        p.name: sorted(
            m for m in imports_of(p) if m.startswith(("sqlalchemy", "kiln.queries", "kiln.services"))
        )
        for p in modules("entities")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_routers_start_no_git():
    """Git runs below services/: routers neither open repositories nor start processes."""
    offenders = {
        p.name: sorted(
            m
            for m in imports_of(p)
            if m.startswith(("kiln.git", "pygit2", "subprocess", "asyncio.subprocess"))
        )
        for p in modules("api")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_entities_import_no_service():
    """Entities render records that live with the queries building them: not even a type
    comes from a service."""
    offenders = {
        p.name: sorted(m for m in imports_of(p, type_checking=True) if m.startswith("kiln.services"))
        for p in modules("entities")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
