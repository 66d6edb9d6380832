"""The terms of service as the web page shows them."""

from __future__ import annotations

from typing import Any


def latest_terms(term_id: int, terms: str, accepted: bool | None) -> dict[str, Any]:
    """`accepted`: whether the signed-in user accepted this version (null for nobody)."""
    return {"id": term_id, "terms": terms, "accepted": accepted}


def accepted(term_id: int) -> dict[str, Any]:
    return {"accepted_term_id": term_id}
