"""The one error type, the code table and the one envelope.

Every error anywhere is ``{ errors: [{ code, message, path?, extensions? }] }``;
``extensions.code`` repeats ``code`` so Directus-style clients read it too. Raise
``ApiError``; never build an error body by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


class SettingsError(ValueError):
    """A configuration variable has a value the service cannot use (``kernel.settings`` and the
    keyring of ``kernel.secrets`` raise it at boot)."""

# code -> (default HTTP status, description). Plugins add theirs through register_error_codes.
KERNEL_ERROR_CODES: dict[str, tuple[int, str]] = {
    "VALIDATION_FAILED": (400, "Input failed validation (422 in some areas)."),
    "VALIDATION": (400, "Malformed JSON filter."),
    "ENCRYPTION_KEY_REQUIRED": (400, "The feature stores secrets and SVC_ENCRYPTION_KEY is not set."),
    "UNAUTHENTICATED": (401, "No credentials, or credentials that are not valid."),
    "TOKEN_EXPIRED": (401, "The access token has expired; refresh and retry."),
    "INVALID_CREDENTIALS": (401, "Wrong email or password."),
    "PERMISSION_DENIED": (403, "The principal may not do this (field denials carry extensions.reason)."),
    "NOT_FOUND": (404, "No such route or resource."),
    "RECORD_NOT_FOUND": (404, "The record does not exist or is not visible."),
    "SITE_NOT_FOUND": (404, "The site header or subdomain names an unknown site."),
    "METHOD_NOT_ALLOWED": (405, "The route does not answer this method."),
    "CONFLICT": (409, "A unique constraint would be violated."),
    "PAYLOAD_TOO_LARGE": (413, "The request body is larger than SVC_MAX_BODY_BYTES."),
    "UNSUPPORTED_MEDIA_TYPE": (415, "The request body is not in a supported media type."),
    "RATE_LIMITED": (429, "Too many requests in the current window."),
    "INTERNAL": (500, "An unexpected fault; the request id identifies it in the log."),
    "EMAIL_NOT_CONFIGURED": (503, "No SMTP transport is configured."),
    "SERVICE_UNAVAILABLE": (503, "A dependency of the service is not ready."),
    "INSUFFICIENT_STORAGE": (507, "The file storage has no room for the bytes; nothing was stored."),
}


@dataclass
class ErrorDetail:
    code: str
    message: str
    path: Sequence[str | int] | None = None
    extensions: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.path is not None:
            out["path"] = [str(p) for p in self.path]
        ext = dict(self.extensions or {})
        ext["code"] = self.code
        out["extensions"] = ext
        return out


class ApiError(Exception):
    """An error answered to the client with the spec's envelope.

    ``ApiError(404, "RECORD_NOT_FOUND", "No such item")``; several details can travel in one
    response through ``more``. ``headers`` are added to the response (for example Retry-After).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        path: Sequence[str | int] | None = None,
        extensions: dict[str, Any] | None = None,
        more: Iterable[ErrorDetail] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.details = [ErrorDetail(code, message, path, extensions), *more]
        self.headers = headers or {}

    @property
    def code(self) -> str:
        return self.details[0].code

    @property
    def message(self) -> str:
        return self.details[0].message

    def body(self) -> dict[str, Any]:
        return {"errors": [d.to_dict() for d in self.details]}

    # Constructors for the common cases keep call sites short and the codes consistent.
    @classmethod
    def validation(cls, message: str, path: Sequence[str | int] | None = None, status: int = 400,
                   **ext: Any) -> ApiError:
        return cls(status, "VALIDATION_FAILED", message, path=path, extensions=ext or None)

    @classmethod
    def not_found(cls, message: str = "Not found", code: str = "NOT_FOUND") -> ApiError:
        return cls(404, code, message)

    @classmethod
    def forbidden(cls, message: str = "You do not have permission to do this", **ext: Any) -> ApiError:
        return cls(403, "PERMISSION_DENIED", message, extensions=ext or None)

    @classmethod
    def unauthenticated(cls, message: str = "Authentication required") -> ApiError:
        return cls(401, "UNAUTHENTICATED", message)

    @classmethod
    def conflict(cls, message: str, code: str = "CONFLICT", **ext: Any) -> ApiError:
        return cls(409, code, message, extensions=ext or None)


def error_body(status: int, code: str, message: str, **kw: Any) -> dict[str, Any]:
    """The envelope for a one-detail error (for places that cannot raise, like middleware)."""
    return ApiError(status, code, message, **kw).body()


# Falcon's own HTTP errors (routing, media, body limits) mapped onto our codes.
FALCON_STATUS_CODES: dict[int, str] = {
    400: "VALIDATION_FAILED",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    411: "VALIDATION_FAILED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
}
