"""The one pagination helper: Page from parameters; headers and Link on the way out."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlencode

from litestar import Request, Response

from kiln.api._deps import runtime
from kiln.api._params import query_pairs
from kiln.api._render import render
from kiln.errors import KeysetUnavailable, ParamError
from kiln.pagination import DEFAULT_PER_PAGE, MAX_PER_PAGE, Page, PageResult
from kiln.schemas._types import PageParams


def page_of(q: PageParams, *, keyset_allowed: bool = False, order_by: str | None = None) -> Page:
    if q.per_page == 0:
        raise ParamError("per_page has a value not allowed")
    # Negative values fall back to the defaults; above the cap is silently capped.
    per_page = min(q.per_page if q.per_page > 0 else DEFAULT_PER_PAGE, MAX_PER_PAGE)
    sort: Literal["asc", "desc"] = "asc" if (q.sort or "").lower() == "asc" else "desc"
    if q.pagination == "keyset":
        if not keyset_allowed or order_by not in (None, "id"):
            raise KeysetUnavailable()
        return Page(page=1, per_page=per_page, keyset=True, sort=sort)
    return Page(page=max(q.page, 1), per_page=per_page, sort=sort)


def paginated(
    request: Request[Any, Any, Any], items: list[Any], page: Page, result: PageResult
) -> Response[bytes]:
    if page.keyset:
        return render(items, headers=_keyset_headers(request, page, result))
    return render(items, headers=offset_headers(request, page, result))


def offset_headers(request: Request[Any, Any, Any], page: Page, result: PageResult) -> dict[str, str]:
    n = page.page
    total = result.total
    total_pages = max(1, -(-total // page.per_page)) if total is not None else None
    next_page = n + 1 if result.has_next else None
    prev_page = n - 1 if n > 1 else None
    if total_pages is not None and n > total_pages:
        prev_page = None  # past the end there is no neighbour, only first and last
    headers = {
        "X-Page": str(n),
        "X-Per-Page": str(page.per_page),
        "X-Next-Page": str(next_page) if next_page else "",
        "X-Prev-Page": str(prev_page) if prev_page else "",
    }
    if total is not None and total_pages is not None:
        headers["X-Total"] = str(total)
        headers["X-Total-Pages"] = str(total_pages)
    per_page = page.per_page
    links = []
    if prev_page:
        links.append(f'<{_url(request, page=prev_page, per_page=per_page)}>; rel="prev"')
    if next_page:
        links.append(f'<{_url(request, page=next_page, per_page=per_page)}>; rel="next"')
    links.append(f'<{_url(request, page=1, per_page=per_page)}>; rel="first"')
    if total_pages is not None:
        links.append(f'<{_url(request, page=total_pages, per_page=per_page)}>; rel="last"')
    headers["Link"] = ", ".join(links)
    return headers


def _keyset_headers(request: Request[Any, Any, Any], page: Page, result: PageResult) -> dict[str, str]:
    if not result.has_next or result.next_key is None:
        return {}
    if result.cursor_param is not None:
        bound, drop = result.cursor_param, (result.cursor_param, "page")
    else:
        bound = "id_after" if page.sort == "asc" else "id_before"
        drop = ("id_after", "id_before", "page")
    url = _url(request, drop=drop, per_page=page.per_page, **{bound: result.next_key})
    return {"Link": f'<{url}>; rel="next"'}


def _url(request: Request[Any, Any, Any], drop: tuple[str, ...] = ("page",), **set_: Any) -> str:
    """Absolute (clients follow it verbatim), on the external URL, with the request's query
    plus the page keys, sorted by key as Rails' to_query does."""
    base = runtime(request).settings.external_url
    pairs = [(k, v) for k, v in query_pairs(request) if k not in drop and k not in set_]
    pairs += [(k, str(v)) for k, v in set_.items()]
    pairs.sort(key=lambda kv: kv[0])  # stable: repeated keys (a[]=) keep their order
    raw_path = request.scope.get("raw_path") or request.scope["path"].encode()
    path = raw_path.split(b"?", 1)[0].decode("latin-1")
    return f"{base}{path}?{urlencode(pairs)}"
