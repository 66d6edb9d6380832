"""Bytes that users wrote (uploads, avatars, repository files and blobs, archives, package files,
job artifacts), served from kiln's own origin so that no browser runs them.

Three guards, each enough alone for the common case: a type that says what the bytes are and is
never sniffed into another (`nosniff`); an attachment for every type a browser would render as
a document or run (SVG, HTML, XML, scripts, PDF, anything unknown); and a Content-Security-Policy
that sandboxes whatever is shown anyway, so it has no origin, no script and no requests. Inline
are only plain text and the raster images, audio and video GitLab embeds, as GitLab serves them.
"""

from __future__ import annotations

import mimetypes
from collections.abc import AsyncIterable, Iterable, Mapping
from dataclasses import dataclass

from litestar.response import Stream

from kiln.api._render import content_disposition
from kiln.services.uploads import StoredFile
from kiln.storage import Storage

TEXT = "text/plain"  # Litestar adds "; charset=utf-8" to every text/* type
OCTET_STREAM = "application/octet-stream"
SANDBOX = "default-src 'none'; sandbox"

# The images, video and audio a browser only displays (GitLab's safe image, video and audio
# extensions), by extension, so the answer is the same on every host. SVG is an image that
# runs script: it is served as the image it is, for <img>, but only ever as an attachment.
_DISPLAYED = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "bmp": "image/bmp",
    "tiff": "image/tiff",
    "ico": "image/vnd.microsoft.icon",
    "webp": "image/webp",
    "mp4": "video/mp4",
    "m4v": "video/mp4",
    "mov": "video/quicktime",
    "webm": "video/webm",
    "ogv": "video/ogg",
    "mp3": "audio/mpeg",
    "oga": "audio/ogg",
    "ogg": "audio/ogg",
    "spx": "audio/ogg",
    "wav": "audio/wav",
}


@dataclass(frozen=True, slots=True)
class ServedAs:
    """The Content-Type bytes go out with, and whether a browser may show them in place."""

    media_type: str
    inline: bool

    @classmethod
    def download(cls, media_type: str) -> ServedAs:
        """Bytes that are only ever saved (archives): an attachment whatever the type."""
        return cls(media_type, inline=False)


def served_as(name: str | None, *, text: bool | None = None) -> ServedAs:
    """How bytes called `name` go out. `text` is what the content is when it is known (git
    tells text from binary): text is plain text whatever its name, so a repository's HTML or
    SVG shows as its source; bytes that are not text are never labelled as text."""
    if text:
        return ServedAs(TEXT, inline=True)
    ext = name.rsplit(".", 1)[-1].lower() if name and "." in name else ""
    if ext in _DISPLAYED:
        return ServedAs(_DISPLAYED[ext], inline=True)
    guessed, encoding = mimetypes.guess_type(name or "", strict=False)
    if guessed is None or encoding is not None:
        # Unknown, or compressed (`.tar.gz`, `.svgz`): the bytes are what is sent, nothing more.
        return ServedAs(OCTET_STREAM, inline=False)
    if text is False and guessed.startswith("text/"):
        return ServedAs(OCTET_STREAM, inline=False)
    return ServedAs(guessed, inline=guessed == TEXT)


def headers(name: str | None, served: ServedAs) -> dict[str, str]:
    """The headers every response carrying user bytes sends: the disposition (with the file
    name when there is one, for `curl -OJ` and browsers' Save As), nosniff, and the sandbox."""
    kind = "inline" if served.inline else "attachment"
    return {
        "Content-Disposition": content_disposition(kind, name) if name else kind,
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": SANDBOX,
    }


def stream(
    body: Iterable[bytes] | AsyncIterable[bytes],
    name: str | None,
    served: ServedAs,
    extra: Mapping[str, str] | None = None,
) -> Stream:
    """User bytes streamed unchanged with `headers`; `extra` (length, caching, X-Gitlab-*)
    never overrides the guards."""
    return Stream(body, media_type=served.media_type, headers={**(extra or {}), **headers(name, served)})


def stored(files: Storage, upload: StoredFile) -> Stream:
    """An uploaded file's bytes from storage (a project upload, an avatar), unchanged."""
    extra = {} if upload.size is None else {"Content-Length": str(upload.size)}
    return stream(files.iter_bytes(upload.key), upload.name, served_as(upload.name), extra)
