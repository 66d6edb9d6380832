"""Rendering any Markdown for a caller (GitLab's Markdown API): sanitized HTML, and with `gfm`
the references linked that the caller may see, read from a project they may see (404 when
hidden), as issue and note texts are rendered."""

from __future__ import annotations

from sqlalchemy.orm import Session

from kiln import markdown, references
from kiln.auth.actor import Actor
from kiln.errors import ValidationFailed
from kiln.schemas.markdown import MarkdownRender
from kiln.services import subjects

# GitLab refuses longer texts (Gitlab::CurrentSettings.markdown_...): the same limit as a description.
TEXT_LIMIT = 1_048_576


def render(db: Session, actor: Actor, p: MarkdownRender, base_url: str) -> str:
    if len(p.text) > TEXT_LIMIT:
        raise ValidationFailed({"text": [f"is too long (maximum is {TEXT_LIMIT} characters)"]})
    if not p.gfm:
        return markdown.render(p.text)
    project = subjects.project(db, actor, p.project, rows=True) if p.project else None
    refs = references.References(db, actor, base_url, project=project)
    return markdown.render_gfm(p.text, refs)
