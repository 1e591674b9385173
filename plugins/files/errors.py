"""The files plugin's error codes: every refusal of the upload guard names why."""

from __future__ import annotations

from typing import Any

from kernel import ApiError

ERROR_CODES: dict[str, tuple[int, str]] = {
    "FILE_TOO_LARGE": (413, "The upload is larger than the upload policy's maxBytes."),
    "FILE_TYPE_NOT_ALLOWED": (415, "The declared MIME type is not in the upload policy's allowlist."),
    "FILE_EXTENSION_MISMATCH": (415, "The file name's extension does not match the declared MIME type."),
    "FILE_CONTENT_MISMATCH": (415, "The bytes are not of the declared type (magic-number sniffing)."),
    "FILE_EXECUTABLE": (422, "The bytes are an executable or a script; never accepted."),
    "FILE_ACTIVE_CONTENT": (422, "An SVG with scripts, event handlers, javascript: URLs, foreignObject, "
                                 "external references or XML entities."),
    "FILE_EMBEDDED_PAYLOAD": (422, "An image carrying a script, an executable or data after its end."),
    "IMPORT_FAILED": (502, "POST /files/import: the remote server could not be reached or did not answer 200."),
    "IMAGE_TOO_LARGE": (422, "The image has more pixels than SVC_FILES_MAX_INPUT_PIXELS allows to transform."),
    "RANGE_NOT_SATISFIABLE": (416, "GET /assets or /media with a Range that starts at or after the end of the "
                                   "bytes (Content-Range: bytes */SIZE)."),
}


def refuse(code: str, message: str, **extensions: Any) -> ApiError:
    """The guard's refusal ``code`` with its status from ``ERROR_CODES``."""
    return ApiError(ERROR_CODES[code][0], code, message, extensions=extensions or None)


def not_found(what: str = "file") -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", f"No such {what} in this site")
