"""Reads of rows a user owns (SSH keys, GPG keys, further e-mail addresses): one table with a
`user_id`, listed oldest first a page at a time, or one of them by id."""

from __future__ import annotations

from collections import namedtuple
from functools import cached_property
from typing import Any

from sqlalchemy import Select, Table, bindparam, select
from sqlalchemy.orm import Session

from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import row_columns, run


class OwnedRows:
    """The two statements, built once, and their `Row` records (a namedtuple of the table's
    columns, named `row_name` in `module`)."""

    def __init__(self, table: Table, row_name: str, module: str) -> None:
        self.table = table
        self.Row = namedtuple(row_name, [c.key for c in table.c], module=module)  # type: ignore[misc]

    @cached_property
    def _of_user(self) -> Select[Any]:
        t = self.table
        return select(*row_columns(t)).where(t.c.user_id == bindparam("user_id")).order_by(t.c.id)

    @cached_property
    def _one_of_user(self) -> Select[Any]:
        t = self.table
        return select(*row_columns(t)).where(
            t.c.user_id == bindparam("user_id"), t.c.id == bindparam("row_id")
        )

    def page_of_user(self, db: Session, user_id: int, page: Page) -> PageResult:
        """One page of the user's rows, oldest first; items are `Row` records."""
        result = offset_page(db, self._of_user, page, core=True, params={"user_id": user_id})
        result.items = [self.Row._make(row) for row in result.items]
        return result

    def one_of_user(self, db: Session, user_id: int, row_id: int) -> Any | None:
        row = run(db, self._one_of_user, {"user_id": user_id, "row_id": row_id}).first()
        return None if row is None else self.Row._make(row)
