"""The one parameter parser: path + query + form + multipart + JSON, merged as Grape does,
then validated by the route's Params model with Grape's error messages."""

from __future__ import annotations

import re
from typing import Any, BinaryIO, cast
from urllib.parse import parse_qsl, unquote

import orjson
from litestar import Request
from litestar.datastructures import UploadFile
from pydantic import ValidationError

from kiln.api._deps import in_thread
from kiln.errors import BadRequest, ParamError, PayloadTooLarge
from kiln.schemas._types import GrapeMessage, Params, Upload

MALFORMED_JSON = (
    "message body does not match declared format: when specifying application/json as "
    "content-type, you must pass valid application/json in the request's 'body'"
)
_KEY_PART = re.compile(r"\[([^\[\]]*)\]")
# Rack's bounds on form and query parameters: how deep a bracketed key nests, and how many
# pairs one request carries. Past them the request is refused before anything is built.
MAX_KEY_DEPTH = 32
MAX_PAIRS = 10_000
TOO_DEEP = "Parameters are nested too deeply"
TOO_MANY = "Too many parameters"
# No parameter may carry a NUL byte (GitLab's HandleNullBytes): git, the filesystem and
# PostgreSQL all end a string there or refuse it.
NUL_REFUSED = "Null bytes are not allowed"
# A body this large is parsed and validated in a thread: a 100 MiB JSON body (a commit with a
# million actions) costs seconds of work that would otherwise stop every other request.
OFF_LOOP_BYTES = 256 * 1024
# Arrays, objects and members one JSON body may hold: each costs the process tens of bytes,
# so a 100 MiB body of `[],[],…` would take gigabytes. A 20,000-action commit holds ~100,000.
MAX_JSON_ELEMENTS = 1_000_000
TOO_MANY_ELEMENTS = "The JSON body holds too many elements"
_LARGE_BODY = "kiln_large_body"

# Pydantic error types that mean "not one of the allowed values".
_VALUE_ERRORS = {"literal_error", "enum"}


async def params(request: Request[Any, Any, Any]) -> Any:
    """Parse and validate the parameters declared on the route (`params=` in api/_routes)."""
    model: type[Params] = request.route_handler.opt["params"]
    raw = await gather(request)
    if request.scope.get(_LARGE_BODY):
        return await in_thread(validate, model, raw)
    return validate(model, raw)


def validate(model: type[Params], raw: dict[str, Any]) -> Any:
    # JSON null for an optional field means "not given" (clients.md 5), unless the model
    # gives null a meaning of its own.
    raw = {k: v for k, v in raw.items() if v is not None or k in model.keep_null}
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ParamError(grape_message(exc)) from None


def grape_message(exc: ValidationError) -> str:
    messages: list[str] = []
    for err in exc.errors():
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, GrapeMessage):
            text = str(ctx_error)
        else:
            name = _loc_name(err["loc"])
            if err["type"] == "missing":
                text = f"{name} is missing"
            elif err["type"] in _VALUE_ERRORS:
                text = f"{name} does not have a valid value"
            else:
                text = f"{name} is invalid"
        if text not in messages:
            messages.append(text)
    return ", ".join(messages)


def _loc_name(loc: tuple[int | str, ...]) -> str:
    """Grape names `actions[0][file_path]`, but a bad member of a plain array by the array."""
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("function"))))
    while len(loc) > 1 and isinstance(loc[-1], int):
        loc = loc[:-1]
    parts = [str(p) for p in loc]
    if not parts:
        return "params"
    head, *rest = parts
    return head + "".join(f"[{p}]" for p in rest)


async def gather(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """All parameters of the request in one dict: query < body < path."""
    cached = cast("dict[str, Any] | None", request.scope.get("kiln_params"))  # type: ignore[typeddict-item]
    if cached is not None:
        return dict(cached)
    merged: dict[str, Any] = {}
    _fold_pairs(merged, query_pairs(request))
    body = await body_params(request)
    # The URL and the headers were searched for NUL before routing (KilnASGI); the body is here.
    large = request.scope.get(_LARGE_BODY)
    if await in_thread(_holds_nul, body) if large else _holds_nul(body):
        raise BadRequest(NUL_REFUSED)
    merged.update(body)
    for key, value in request.path_params.items():
        merged[key] = unquote(value) if isinstance(value, str) else value
    request.scope["kiln_params"] = merged  # type: ignore[typeddict-unknown-key]
    return dict(merged)


def query_pairs(request: Request[Any, Any, Any]) -> list[tuple[str, str]]:
    raw: bytes = request.scope.get("query_string", b"")
    if not raw:
        return []
    try:
        text = raw.decode("utf-8")
        return parse_qsl(
            text, keep_blank_values=True, encoding="utf-8", errors="strict", max_num_fields=MAX_PAIRS
        )
    except UnicodeError:
        raise BadRequest("query string is not valid UTF-8") from None
    except ValueError:
        raise BadRequest(TOO_MANY) from None


async def body_params(request: Request[Any, Any, Any]) -> dict[str, Any]:
    headers = request.headers
    length = headers.get("content-length")
    if length is None and "transfer-encoding" not in headers:
        return {}  # no body at all (RFC 9112 6.3): most GETs, nothing to wait for
    if (length or "").strip() == "0":
        return {}  # an empty body means no parameters, whatever its declared type
    content_type = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if content_type.startswith("multipart/form-data"):
        return await _multipart(request)
    body = await read_body(request)
    if not body.strip():
        return {}
    if len(body) > OFF_LOOP_BYTES:
        request.scope[_LARGE_BODY] = True  # type: ignore[typeddict-unknown-key]
    if content_type in ("application/json", "") or content_type.endswith("+json"):
        try:
            data = await in_thread(_bounded_json, body) if len(body) > OFF_LOOP_BYTES else orjson.loads(body)
        except orjson.JSONDecodeError:
            raise ParamError(MALFORMED_JSON) from None
        if not isinstance(data, dict):
            raise ParamError("The request body must be a JSON object")
        return data
    if content_type == "application/x-www-form-urlencoded":
        try:
            pairs = await in_thread(_form_pairs, body) if len(body) > OFF_LOOP_BYTES else _form_pairs(body)
        except UnicodeError:
            raise BadRequest("form body is not valid UTF-8") from None
        except ValueError:
            raise BadRequest(TOO_MANY) from None
        out: dict[str, Any] = {}
        _fold_pairs(out, pairs)
        return out
    raise BadRequest(f"The provided content-type '{content_type}' is not supported.")


async def read_body(request: Request[Any, Any, Any]) -> bytes:
    """The whole body, cached on the request (Litestar's cache, so a later form() still works)."""
    limit: int = request.app.state.kiln.settings.max_request_body_bytes
    body = await request.body()
    if len(body) > limit:
        raise PayloadTooLarge()
    return body


async def _multipart(request: Request[Any, Any, Any]) -> dict[str, Any]:
    try:
        form = await request.form()
    except Exception:  # a broken multipart body is the client's error
        raise BadRequest("Malformed multipart body") from None
    pairs: list[tuple[str, Any]] = []
    for key, value in form.multi_items():
        if len(pairs) >= MAX_PAIRS:
            raise BadRequest(TOO_MANY)
        if key == "" and not value:
            continue  # python-gitlab may send an empty extra part
        if isinstance(value, UploadFile):
            pairs.append((key, Upload(value.filename, value.content_type, cast(BinaryIO, value.file))))
        else:
            pairs.append((key, value))
    out: dict[str, Any] = {}
    _fold_pairs(out, pairs)
    return out


def _bounded_json(body: bytes) -> Any:
    """A large body parsed only if it holds at most MAX_JSON_ELEMENTS elements."""
    if not json_elements_within(body, MAX_JSON_ELEMENTS):
        raise BadRequest(TOO_MANY_ELEMENTS)
    return orjson.loads(body)


def json_elements_within(body: bytes, limit: int) -> bool:
    """Whether the commas and opening brackets outside JSON strings number at most `limit`,
    without building anything: the bytes are counted in place between strings, so text
    full of commas in a file's content counts for nothing."""
    if body.count(b",") + body.count(b"[") + body.count(b"{") <= limit:
        return True  # even counting inside strings it is within
    count, pos, end = 0, 0, len(body)
    while pos < end:
        quote = body.find(b'"', pos)
        stop = end if quote < 0 else quote
        count += body.count(b",", pos, stop) + body.count(b"[", pos, stop) + body.count(b"{", pos, stop)
        if count > limit:
            return False
        if quote < 0:
            return True
        pos = _string_end(body, quote)
    return True


def _string_end(body: bytes, quote: int) -> int:
    """Just past the string opening at `quote`: the next quote after an even run of
    backslashes (the end of the body if it never closes; the parser then refuses it)."""
    search = quote + 1
    while True:
        close = body.find(b'"', search)
        if close < 0:
            return len(body)
        back = close - 1
        while back > quote and body[back] == 0x5C:
            back -= 1
        if (close - 1 - back) % 2 == 0:
            return close + 1
        search = close + 1


def _form_pairs(body: bytes) -> list[tuple[str, str]]:
    return parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict", max_num_fields=MAX_PAIRS)


def _holds_nul(params: dict[str, Any]) -> bool:
    """Whether any key or string value, however deep, holds a NUL; walked without recursion,
    as a JSON body may nest a thousand levels."""
    pending: list[Any] = [params]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _fold_pairs(target: dict[str, Any], pairs: list[tuple[str, Any]]) -> None:
    """Rack-style keys: `a[]=1&a[]=2` → a: [1, 2]; `h[k]=v` → h: {k: v}; `v[][key]=x` → list of dicts."""
    for key, value in pairs:
        head, _, rest = key.partition("[")
        if not rest:
            target[key] = value
            continue
        parts = _KEY_PART.findall("[" + rest)
        if len(parts) > MAX_KEY_DEPTH:
            raise BadRequest(TOO_DEEP)
        _assign(target, head, parts, value)


def _assign(container: dict[str, Any], head: str, parts: list[str], value: Any) -> None:
    if not parts:
        container[head] = value
        return
    first, *more = parts
    if first == "":
        existing = container.get(head)
        if not isinstance(existing, list):
            existing = container[head] = []
        if not more:
            existing.append(value)
            return
        # arrays of hashes: start a new element when its key is already set
        if not existing or not isinstance(existing[-1], dict) or more[0] in existing[-1]:
            existing.append({})
        _assign(existing[-1], more[0], more[1:], value)
        return
    existing = container.get(head)
    if not isinstance(existing, dict):
        existing = container[head] = {}
    _assign(existing, first, more, value)
