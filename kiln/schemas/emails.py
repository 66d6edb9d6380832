"""Request contracts for further e-mail addresses (GitLab's Users API "Emails" parameters)."""

from __future__ import annotations

from kiln.schemas._types import Flag, PageParams, Params


class EmailList(PageParams):
    pass


class EmailCreate(Params):
    email: str


class UserEmailCreate(EmailCreate):
    skip_confirmation: Flag = False
