"""The web sign-up form (GitLab's registration): fields nested under `user[...]`."""

from __future__ import annotations

from kiln.schemas._types import Params
from kiln.schemas.users import Email


class SignUpFields(Params):
    username: str | None = None
    email: Email | None = None
    password: str | None = None
    # One name, or a first and a last name that make it.
    name: str | None = None
    first_name: str | None = None
    last_name: str | None = None


class SignUp(Params):
    user: SignUpFields | None = None
