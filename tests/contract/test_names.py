"""One name per resource in every layer: a resource's router, service, schemas, entities,
queries and HTTP tests share one module name (kiln/api/tags.py, services/tags.py,
schemas/tags.py, entities/tags.py, tests/api/test_tags.py), so every part of a resource is
found by that name and a new resource copies one shape. A resource need not exist in every
layer; where it does, the name is the same."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KILN = ROOT / "kiln"
API_TESTS = ROOT / "tests" / "api"

# Routers that serve no resource of their own, so no service carries their name.
ROUTERS_WITHOUT_SERVICE = {
    "meta": "instance endpoints (version, metadata, OpenAPI, health, metrics), not a resource; "
    "readiness asks services/health.py",
}

# Query modules every resource's reads share; the others name their resource.
SHARED_QUERIES = {
    "access": "the caller's access level in projects and groups, used by every scoped read",
    "paging": "running any list statement for one page",
    "reads": "how every hot read runs a Core statement",
    "shapes": "keeping a list's statements per shape, for every list built from parameters",
    "text": "matching user-typed text, for every search filter",
}


def names(layer: str) -> set[str]:
    """A layer's public modules: `name.py`, or a `name/` package once a resource outgrows one
    module; `_private` modules are the layer's own plumbing."""
    found = set()
    for path in (KILN / layer).iterdir():
        if path.name.startswith("_"):
            continue
        if path.suffix == ".py":
            found.add(path.stem)
        elif path.is_dir() and (path / "__init__.py").exists():
            found.add(path.name)
    return found


def test_every_router_has_a_service_of_its_name():
    missing = names("api") - names("services") - set(ROUTERS_WITHOUT_SERVICE)
    assert missing == set(), f"kiln/api modules without kiln/services/<name>.py: {sorted(missing)}"


def test_every_router_has_http_tests_of_its_name():
    missing = {name for name in names("api") if not (API_TESTS / f"test_{name}.py").exists()}
    assert missing == set(), f"kiln/api modules without tests/api/test_<name>.py: {sorted(missing)}"


def test_every_schema_module_names_a_resource():
    stray = names("schemas") - names("api") - names("services")
    assert stray == set(), f"kiln/schemas modules naming no router or service: {sorted(stray)}"


def test_every_entity_module_names_a_resource():
    stray = names("entities") - names("api") - names("services")
    assert stray == set(), f"kiln/entities modules naming no router or service: {sorted(stray)}"


def test_every_query_module_names_a_resource_or_is_shared():
    stray = names("queries") - names("api") - names("services") - set(SHARED_QUERIES)
    assert stray == set(), f"kiln/queries modules naming no router or service: {sorted(stray)}"


def test_the_exceptions_name_modules_that_exist():
    """An exception outlives its module only as a stale excuse."""
    assert set(ROUTERS_WITHOUT_SERVICE) <= names("api")
    assert set(SHARED_QUERIES) <= names("queries")
