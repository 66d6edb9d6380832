"""Request contracts for repository files (spec part 1 "Repository files"). `file_path`
arrives from the URL, already decoded (`docs%2FREADME.md`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import AfterValidator

from kiln.schemas._types import Flag, GrapeMessage, OptionalStr, Params

FILE_PATH_INVALID = "file_path should be a valid file path"


def valid_file_path(path: str) -> bool:
    """GitLab's file_path validator: no traversal (`..` as a part, either slash), no absolute
    path, no NUL or newline."""
    if not path or path in (".", "..") or path.startswith(("/", "\\")):
        return False
    if "\x00" in path or "\n" in path:
        return False
    parts = path.replace("\\", "/").split("/")
    return ".." not in parts


def _file_path(value: str) -> str:
    if not valid_file_path(value):
        raise GrapeMessage(FILE_PATH_INVALID)
    return value


def _not_blank(name: str) -> Callable[[str], str]:
    """Grape's allow_blank: false (empty or only whitespace is "<name> is empty")."""

    def check(value: str) -> str:
        if not value.strip():
            raise GrapeMessage(f"{name} is empty")
        return value

    return check


def _positive(name: str) -> Callable[[int], int]:
    def check(value: int) -> int:
        if value <= 0:
            raise GrapeMessage(f"{name} does not have a valid value")
        return value

    return check


FilePath = Annotated[str, AfterValidator(_file_path)]
Ref = Annotated[str, AfterValidator(_not_blank("ref"))]
Branch = Annotated[str, AfterValidator(_not_blank("branch"))]
CommitMessage = Annotated[str, AfterValidator(_not_blank("commit_message"))]


class FileGet(Params):
    id: str
    file_path: FilePath
    ref: Ref


class FileRaw(Params):
    id: str
    file_path: FilePath
    ref: Ref | None = None
    lfs: Flag = False


class BlameRange(Params):
    start: Annotated[int, AfterValidator(_positive("range[start]"))]
    end: Annotated[int, AfterValidator(_positive("range[end]"))]


class FileBlame(FileGet):
    range: BlameRange | None = None


class FileDelete(Params):
    id: str
    file_path: FilePath
    branch: Branch
    commit_message: CommitMessage
    start_branch: OptionalStr = None
    author_email: str | None = None
    author_name: str | None = None
    last_commit_id: OptionalStr = None


class FileWrite(FileDelete):
    content: str
    encoding: Literal["text", "base64"] = "text"
    execute_filemode: Flag | None = None
