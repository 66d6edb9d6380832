"""Label views (GitLab's ProjectLabel and GroupLabel entities): the label, the text colour that
reads on it, its description rendered, the caller's subscription, and with counts the issues
and open merge requests carrying it; a project's view adds the rank the project gives it and
whose label it is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln import markdown

if TYPE_CHECKING:
    from kiln.queries.labels import Counts, LabelRow

# GitLab's Gitlab::Color contrast: dark text on light colours, white on the rest.
DARK_TEXT, LIGHT_TEXT = "#333333", "#FFFFFF"
_LIGHT_ABOVE = 500


def _rgb(color: str) -> tuple[int, int, int] | None:
    digits = color[1:] if color.startswith("#") else ""
    if len(digits) == 3:
        digits = "".join(ch * 2 for ch in digits)
    if len(digits) != 6:
        return None
    try:
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    except ValueError:
        return None


def text_color(color: str) -> str:
    """Dark text when the red, green and blue of `color` add up to more than 500."""
    rgb = _rgb(color)
    return DARK_TEXT if rgb is not None and sum(rgb) > _LIGHT_ABOVE else LIGHT_TEXT


def label_basic(label: Any) -> dict[str, Any]:
    """A label as what carries it shows it (issues' `with_labels_details`, epics, boards,
    resource events): GitLab's LabelBasic."""
    return {
        "id": label.id,
        "name": label.title,
        "color": label.color,
        "description": label.description,
        "description_html": markdown.render(label.description) if label.description else "",
        "text_color": text_color(label.color),
    }


def label(
    row: LabelRow,
    *,
    subscribed: bool,
    counts: Counts | None = None,
    in_project: bool = False,
) -> dict[str, Any]:
    """`counts` only when asked for (with_counts); `in_project` for the project's view."""
    view: dict[str, Any] = {
        "id": row.id,
        "name": row.title,
        "color": row.color,
        "description": row.description,
        "description_html": markdown.render_inline(row.description) if row.description else None,
        "text_color": text_color(row.color),
    }
    if counts is not None:
        view["open_issues_count"] = counts.open_issues
        view["closed_issues_count"] = counts.closed_issues
        view["open_merge_requests_count"] = counts.open_merge_requests
    view["subscribed"] = subscribed
    if in_project:
        view["priority"] = row.priority
        view["is_project_label"] = row.project_id is not None
    view["archived"] = False
    return view
