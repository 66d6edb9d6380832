"""What the attacks share: a project owner and a project with a README on `main`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.repositories import new_project


@pytest.fixture
def owner(make: Any) -> Any:
    return make.user(name="Owner Person")


@pytest.fixture
def project(api: Any, make: Any, owner: Any) -> dict[str, Any]:
    """The project as the API answers it to its owner."""
    return new_project(api, make, owner)
