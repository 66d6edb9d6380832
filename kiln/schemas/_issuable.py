"""What the request contracts of issues and merge requests share (GitLab's issuable params):
the list filters' behaviour (`in`, `not[...]`, one of each exclusive pair, an empty `state`),
ids given as an integer or a keyword, and arrays of ids."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import AfterValidator, BeforeValidator, create_model, model_validator

from kiln.schemas._types import CommaList, GrapeMessage, Int, PageParams, Params, mutually_exclusive


def id_or_keyword(value: Any) -> Any:
    """An integer, or `None` / `Any` (any capitalisation)."""
    if value is None:
        return None
    text = str(value).strip()
    if text.lower() in ("none", "any") or text.lstrip("-").isdigit():
        return text
    raise ValueError("not an id")


# assignee_id=5, assignee_id=None, assignee_id=any: a person, nobody or anybody.
IdOrKeyword = Annotated[str | None, AfterValidator(id_or_keyword)]


def in_fields(data: Any, shown: str = "in") -> None:
    """`in` names title and description only (comma-joined or an array)."""
    value = data.get("in") if isinstance(data, dict) else None
    names = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    if any(str(n).strip() not in ("title", "description") for n in names if str(n).strip()):
        raise GrapeMessage(f"{shown} does not have a valid value")


def _ids_value(value: Any) -> Any:
    """assignee_ids: an array, a comma string, or one id; 0 / "" / [] / null mean nobody."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, int):
        return [value]
    return value


IdList = Annotated[list[Int], BeforeValidator(_ids_value)]


class IssuableFilters(PageParams):
    """A list of issues or merge requests: its fields are its own (their order is the order
    of its parameters and messages); `in` and `not` come from `with_in_and_not`."""

    # Pairs of which one at most is given (an empty value is no filter).
    exclusive: ClassVar[tuple[tuple[str, str], ...]] = (
        ("author_id", "author_username"),
        ("assignee_id", "assignee_username"),
    )

    @model_validator(mode="before")
    @classmethod
    def _one_of_each(cls, data: Any) -> Any:
        for pair in cls.exclusive:
            mutually_exclusive(data, *pair, blank=False)
        in_fields(data)
        if isinstance(data, dict) and data.get("state") == "":
            data = {**data, "state": None}
        return data

    @property
    def in_(self) -> list[str] | None:
        """The `in` parameter: which texts `search` looks in."""
        return getattr(self, "in")  # type: ignore[no-any-return]

    @property
    def not_(self) -> Any:
        """The `not[...]` parameters."""
        return getattr(self, "not")


F = TypeVar("F", bound=IssuableFilters)


def with_in_and_not(name: str, base: type[F], negated: type[Params]) -> type[F]:
    """The route's contract: `base` with `in` and `not[...]`, Python keywords that a class body
    cannot declare (type hints keep naming `base`)."""
    fields: dict[str, Any] = {"in": (CommaList | None, None), "not": (negated | None, None)}
    return create_model(name, __base__=base, **fields)
