"""Request contracts for trigger tokens and the pipelines they start (GitLab's
lib/api/ci/triggers.rb parameters)."""

from __future__ import annotations

from typing import Any

from kiln.schemas._types import Int, PageParams, Params


class TriggerList(PageParams):
    id: str


class TriggerGet(Params):
    id: str
    trigger_id: Int


class TriggerCreate(Params):
    id: str
    description: str


class TriggerUpdate(Params):
    id: str
    trigger_id: Int
    description: str | None = None


class TriggerPipeline(Params):
    """`variables` as a hash (`variables[KEY]=value` in a form, an object in JSON) or a JSON
    text of one; its members are checked by the service with GitLab's message."""

    id: str
    ref: str
    token: str
    variables: Any = None
