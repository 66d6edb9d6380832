"""Domain errors. Services raise these; api/_errors.py is the one place that speaks HTTP.

Each error knows its status and GitLab-style body so the handler stays a table lookup.
"""

from __future__ import annotations

from typing import Any


class KilnError(Exception):
    status: int = 500

    def body(self) -> dict[str, Any]:
        return {"message": str(self)}

    def headers(self) -> dict[str, str]:
        return {}


class ParamError(KilnError):
    """Grape-style parameter error: 400 {"error": "title is missing"}."""

    status = 400

    def body(self) -> dict[str, Any]:
        return {"error": str(self)}


class BadRequest(KilnError):
    """400 {"message": "400 Bad request - <what>"} as GitLab's bad_request!; `raw`: the
    message as given (render_api_error!), which may be an object ({"error": "…"})."""

    status = 400

    def __init__(self, what: str | dict[str, Any], *, raw: bool = False) -> None:
        self.message: str | dict[str, Any] = (
            what if raw or isinstance(what, dict) else f"400 Bad request - {what}"
        )
        super().__init__(str(self.message))

    def body(self) -> dict[str, Any]:
        return {"message": self.message}


class ValidationFailed(KilnError):
    """Model validation: 400 {"message": {"email": ["is invalid"]}}."""

    status = 400

    def __init__(self, errors: dict[str, list[str]], status: int = 400) -> None:
        super().__init__(str(errors))
        self.errors = errors
        self.status = status

    def body(self) -> dict[str, Any]:
        return {"message": self.errors}


class Unauthorized(KilnError):
    status = 401

    def __init__(self, message: str = "401 Unauthorized") -> None:
        super().__init__(message)


class InvalidToken(KilnError):
    """A token that is unknown, expired or revoked (OAuth-style body)."""

    status = 401

    def __init__(self, description: str) -> None:
        super().__init__(description)

    def body(self) -> dict[str, Any]:
        return {"error": "invalid_token", "error_description": str(self)}

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": _bearer_challenge("Protected by OAuth 2.0", "invalid_token", str(self))}


class InsufficientScope(KilnError):
    status = 403

    def __init__(self, scopes: list[str]) -> None:
        super().__init__("The request requires higher privileges than provided by the access token.")
        self.scopes = scopes

    def body(self) -> dict[str, Any]:
        return {
            "error": "insufficient_scope",
            "error_description": str(self),
            "scope": " ".join(self.scopes),
        }


class Forbidden(KilnError):
    """403 {"message": "403 Forbidden[ - reason]"}; `message=` passes a service's text through."""

    status = 403

    def __init__(self, reason: str | None = None, *, message: str | None = None) -> None:
        super().__init__(message or (f"403 Forbidden - {reason}" if reason else "403 Forbidden"))


class NotFound(KilnError):
    """404 {"message": "404 <What> Not Found"}; `NotFound()` is the bare "404 Not Found"."""

    status = 404

    def __init__(self, what: str | None = None, *, message: str | None = None) -> None:
        super().__init__(message or (f"404 {what} Not Found" if what else "404 Not Found"))


class RouteNotFound(KilnError):
    status = 404

    def __init__(self) -> None:
        super().__init__("404 Not Found")

    def body(self) -> dict[str, Any]:
        return {"error": "404 Not Found"}


class MethodNotAllowed(KilnError):
    status = 405

    def __init__(self, allow: str = "") -> None:
        super().__init__("405 Not Allowed")
        self.allow = allow

    def body(self) -> dict[str, Any]:
        return {"error": str(self)}

    def headers(self) -> dict[str, str]:
        return {"Allow": self.allow} if self.allow else {}


class KeysetUnavailable(KilnError):
    """GitLab answers 405 when keyset pagination cannot serve a list (resource or order)."""

    status = 405

    def __init__(self) -> None:
        super().__init__("Keyset pagination is not yet available for this type of request")

    def body(self) -> dict[str, Any]:
        return {"error": str(self)}


class NotAllowed(KilnError):
    """GitLab's not_allowed!: 405 with a `message` body (an unrouted method is MethodNotAllowed)."""

    status = 405

    def __init__(self) -> None:
        super().__init__("405 Method Not Allowed")


class NotAcceptable(KilnError):
    """406 {"message": "<message>"}: a merge that can't be made ("Branch cannot be merged")."""

    status = 406


class Conflict(KilnError):
    status = 409


class ConflictList(KilnError):
    """409 whose message is a list of full messages (GitLab's conflict! with errors); another
    `status` for render_api_error! with a list (400, 404, 422)."""

    status = 409

    def __init__(self, messages: list[str], status: int = 409) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages
        self.status = status

    def body(self) -> dict[str, Any]:
        return {"message": self.messages}


class Gone(KilnError):
    """410 {"message": "410 Gone - <reason>"} (GitLab's render_api_error_with_reason!)."""

    status = 410

    def __init__(self, reason: str) -> None:
        super().__init__(f"410 Gone - {reason}")


class PreconditionFailed(KilnError):
    status = 412

    def __init__(self, message: str = "412 Precondition Failed") -> None:
        super().__init__(message)


class JobForbidden(KilnError):
    """403 to a runner about its job, with the job's status in `Job-Status` (a runner stops
    a job it hears is canceled or failed)."""

    status = 403

    def __init__(self, reason: str, job_status: str | None = None) -> None:
        super().__init__(f"403 Forbidden - {reason}")
        self.job_status = job_status

    def headers(self) -> dict[str, str]:
        return {"Job-Status": self.job_status} if self.job_status else {}


class RangeNotSatisfiable(KilnError):
    """416 to a runner whose log append starts elsewhere than the stored log ends; `Range`
    says where to resume."""

    status = 416

    def __init__(self, size: int, job_status: str | None = None) -> None:
        super().__init__("416 Range Not Satisfiable")
        self.size = size
        self.job_status = job_status

    def headers(self) -> dict[str, str]:
        found = {"Range": f"0-{self.size}"}
        if self.job_status:
            found["Job-Status"] = self.job_status
        return found


class PayloadTooLarge(KilnError):
    status = 413

    def __init__(self, message: str = "413 Request Entity Too Large") -> None:
        super().__init__(message)


class Unprocessable(KilnError):
    status = 422


class BlockedUrl(Unprocessable):
    """An outbound request kiln refuses to make (kiln.outbound): the reason is GitLab's
    wording, e.g. "Requests to localhost are not allowed"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OutboundFailed(KilnError):
    """An allowed outbound request that did not get an answer: no connection, a timeout, a
    TLS failure, too many redirects or too large an answer."""

    status = 502


class TooManyRequests(KilnError):
    status = 429

    def __init__(self, retry_after: int = 60) -> None:
        super().__init__("Retry later")
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class Throttled(TooManyRequests):
    """429 {"message": {"error": …}} with Retry-After, as GitLab answers a rate limit that
    names what was throttled (a large blob's downloads)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(retry_after)
        self.detail = message

    def body(self) -> dict[str, Any]:
        return {"message": {"error": self.detail}}


class OAuthError(KilnError):
    """RFC 6749 error body for /oauth/token."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.status = status

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "error_description": str(self)}

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": _bearer_challenge("Doorkeeper", self.error, str(self))}


def _bearer_challenge(realm: str, error: str, description: str) -> str:
    quoted = description.replace("\\", "\\\\").replace('"', '\\"')
    return f'Bearer realm="{realm}", error="{error}", error_description="{quoted}"'
