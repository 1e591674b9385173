"""HTTP Range requests on ``/assets`` and ``/media`` (RFC 9110 section 14; docs/files.md#range-requests).

``wanted(range_header, if_range, etag, size)`` is the one range an answer serves, or None for
the whole representation:

- one ``bytes=a-b``, ``bytes=a-`` or suffix ``bytes=-n`` range is served (206), ``b`` and ``n``
  clipped to the representation;
- a range that starts at or past the end (or ``bytes=-0``) is 416 ``RANGE_NOT_SATISFIABLE`` with
  ``Content-Range: bytes */SIZE``;
- several ranges, another unit, or a header that does not parse are ignored (the whole 200, as
  the RFC allows);
- ``If-Range`` must be the current ETag, compared strongly; anything else (a weak or an old tag,
  a date: svc sends no ``Last-Modified``) gets the whole 200.
"""

from __future__ import annotations

import re

from kernel import ApiError

_SPEC = re.compile(r"bytes[ \t]*=[ \t]*(\d*)[ \t]*-[ \t]*(\d*)[ \t]*", re.IGNORECASE)
_DIGITS_MAX = 19  # no size svc stores has more digits; longer numbers are clipped to that


def unsatisfiable(size: int) -> ApiError:
    return ApiError(
        416,
        "RANGE_NOT_SATISFIABLE",
        f"The range starts at or after the end of the {size} bytes",
        extensions={"size": size},
        headers={"Content-Range": f"bytes */{size}"},
    )


def wanted(range_header: str | None, if_range: str | None, etag: str, size: int) -> tuple[int, int] | None:
    """``(first, last)`` byte positions (inclusive) to serve of ``size`` bytes, or None for all."""
    if not range_header:
        return None
    if if_range is not None and if_range.strip() != etag:
        return None  # stale, weak or a date: the whole representation
    match = _SPEC.fullmatch(range_header.strip())
    if match is None:
        return None  # another unit, several ranges, or not a range at all
    first_text, last_text = (text[:_DIGITS_MAX] for text in match.groups())
    if not first_text:
        if not last_text:
            return None  # "bytes=-" names nothing
        suffix = int(last_text)
        if suffix == 0:
            raise unsatisfiable(size)
        if size == 0:
            return None  # the whole (empty) representation: no byte position can be named
        return max(0, size - suffix), size - 1
    first = int(first_text)
    if last_text and int(last_text) < first:
        return None  # invalid: ignored, as the RFC allows
    if first >= size:
        raise unsatisfiable(size)
    return first, min(int(last_text), size - 1) if last_text else size - 1
