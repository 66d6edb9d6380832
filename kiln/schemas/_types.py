"""The Params base and the small types every request contract shares."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Annotated, Any, BinaryIO, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    InstanceOf,
    PlainValidator,
    ValidationInfo,
    WithJsonSchema,
)


@dataclass(slots=True)
class Upload:
    """A file part of a multipart request, detached from the HTTP framework."""

    filename: str
    content_type: str | None
    file: BinaryIO

    def size(self) -> int:
        pos = self.file.tell()
        self.file.seek(0, 2)
        end = self.file.tell()
        self.file.seek(pos)
        return end


class GrapeMessage(ValueError):
    """A validator's message that becomes the whole 400 `error` text, verbatim."""


def mutually_exclusive(data: Any, *names: str, blank: bool = True, prefix: str = "") -> None:
    """Grape's mutually_exclusive, checked on what was sent (before the types): more than one
    of `names` given (not null) is refused with "a, b are mutually exclusive". `blank=False`:
    an empty value is not given either (a list filter left empty, `author_id=`); `prefix`:
    the names are members of that hash (`not[author_id]`)."""
    if isinstance(data, dict):
        given = [n for n in names if data.get(n) is not None and (blank or data.get(n) != "")]
        if len(given) > 1:
            shown = [f"{prefix}[{n}]" for n in given] if prefix else given
            raise GrapeMessage(f"{', '.join(shown)} are mutually exclusive")


class Params(BaseModel):
    """Unknown keys are ignored, as Grape ignores undeclared parameters."""

    model_config = ConfigDict(
        extra="ignore",
        coerce_numbers_to_str=True,
        str_strip_whitespace=False,
        frozen=False,
    )

    # Fields where JSON null is a value, not "not given".
    keep_null: ClassVar[frozenset[str]] = frozenset()

    def given(self) -> set[str]:
        """Names the caller sent (absent vs null, as Grape's declared_params)."""
        return set(self.model_fields_set)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "t", "1", "yes", "y", "on"):
            return True
        if v in ("false", "f", "0", "no", "n", "off"):
            return False
    raise ValueError("invalid boolean")


# true/false/1/0 in any capitalisation, from query strings, forms and JSON alike.
Flag = Annotated[bool, PlainValidator(_flag), WithJsonSchema({"type": "boolean"})]


def _null_is_false(value: Any) -> Any:
    return False if value is None else value


# A flag whose JSON null means false (declare it in the model's keep_null).
NullFalseFlag = Annotated[Flag | None, BeforeValidator(_null_is_false)]


def _when(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime.combine(value, time.min, UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError("invalid datetime") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError("invalid datetime")


# ISO 8601 date or datetime; a bare date means its midnight UTC.
When = Annotated[datetime, PlainValidator(_when), WithJsonSchema({"type": "string", "format": "date-time"})]


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            raise ValueError("invalid date") from None
    raise ValueError("invalid date")


Day = Annotated[date, PlainValidator(_day), WithJsonSchema({"type": "string", "format": "date"})]


def _blank_day(value: Any) -> Any:
    # An empty date clears it, as Rails casts "" to nil.
    return None if isinstance(value, str) and not value.strip() else value


OptionalDay = Annotated[Day | None, BeforeValidator(_blank_day)]


def _string_list(value: Any) -> Any:
    # `labels=a,b` in a query and ["a", "b"] in JSON mean the same thing.
    if isinstance(value, str):
        return [part for part in (p.strip() for p in value.split(",")) if part]
    return value


CommaList = Annotated[list[str], BeforeValidator(_string_list)]


def _one_as_list(value: Any) -> Any:
    """One value where an array is expected is an array of one (`iids=3`, `assignee_username=a`)."""
    if isinstance(value, (str, int)):
        return [value]
    return value


def _label_names(value: Any) -> Any:
    """Labels as a comma-separated string or an array (of strings, or of comma lists)."""
    if value is None:
        return None
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            out.extend(p.strip() for p in str(item).split(",") if p.strip())
        return out
    return value


LabelNames = Annotated[list[str] | None, BeforeValidator(_label_names)]


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


# Every integer a database column can hold (BIGINT); beyond that a value is invalid, not a 500.
Int = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
IntArray = Annotated[list[Int], BeforeValidator(_one_as_list)]
StrArray = Annotated[list[str], BeforeValidator(_one_as_list)]
# An optional integer where an empty string means "not given".
OptionalInt = Annotated[Int | None, BeforeValidator(_blank_is_none)]
# An optional string where an empty string means "not given".
OptionalStr = Annotated[str | None, BeforeValidator(_blank_is_none)]

# Longer than any name, path or e-mail kiln stores, so no match is lost; short enough that
# the database never refuses the pattern (SQLite stops at 50,000 bytes).
MAX_SEARCH = 4096


def _search_text(value: str, info: ValidationInfo) -> str:
    if len(value) > MAX_SEARCH:
        raise GrapeMessage(f"{info.field_name} is too long (maximum is {MAX_SEARCH} characters)")
    return value


# A search term matched against stored names: bounded, so the matching is too.
SearchText = Annotated[str, AfterValidator(_search_text)]


class PageParams(Params):
    """Shared by every list: offset pagination, and keyset where the resource allows it."""

    page: Annotated[int, Field(le=2**31)] = 1
    per_page: Int = 20
    pagination: str | None = None
    sort: str | None = None


def _numeric(value: Any) -> Any:
    # "30" from a query string or form is the integer 30; a choice of integers then applies.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return value


# An access level given as a number (query, form or JSON): anything else "does not have a valid value".
AccessLevel = Annotated[Literal[10, 20, 30, 40, 50], BeforeValidator(_numeric)]

# A file part of a multipart body (anything else is "invalid").
UploadFile = Annotated[InstanceOf[Upload], WithJsonSchema({"type": "string", "format": "binary"})]
