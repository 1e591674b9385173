"""Conditional updates of one item (docs/items.md, "Conditional updates"): the item's ETag and the
``If-Match`` check.

The tag is a strong ETag. For a caller who reads every field of the item, it is a digest of the
item's id and the time of its last write (``updated_at``, to the microsecond): every write
changes it, and it says nothing of the content. For a caller whose field mask hides something,
it is a digest of the item as that caller reads it (``view_etag``): a write to a field it cannot
read must not change its tag, or the tag would tell it that a hidden field changed. A ``PATCH`` or ``PUT`` with ``If-Match`` is applied only when one of the listed tags
(or ``*``) matches the item as stored when the write locks it; else 412 ``PRECONDITION_FAILED``.
Without ``If-Match`` nothing of this runs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import iso

ERROR_CODES: dict[str, tuple[int, str]] = {
    "PRECONDITION_FAILED": (
        412,
        "A conditional update's If-Match names none of the item's current ETag: "
        "someone else changed it since it was read; extensions.etag is the current tag.",
    ),
}
# A list of entity tags (RFC 9110): strong "..." or weak W/"..." (weak ones never match If-Match).
_ONE = r'(W/)?"([\x21\x23-\x7e]*)"'
_LIST = re.compile(rf"\s*{_ONE}\s*(?:,\s*{_ONE}\s*)*")
_EACH = re.compile(_ONE)
MAX_HEADER = 2048
# What kernel.db.meta.iso() writes: UTC, naive, microseconds only when not zero, and a Z.
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{6})?Z")


def item_etag(item_id: str, updated_at: Any) -> str:
    """The ETag of an item: ``updated_at`` a datetime (a row's) or the ISO text of ``updatedAt``."""
    # The read plan's text and a row's datetime are brought to one form (iso()); a text already
    # in that form (the usual case) is taken as it is.
    if not isinstance(updated_at, str):
        text = iso(updated_at)
    elif _ISO.fullmatch(updated_at):
        text = updated_at
    else:
        text = iso(dt.datetime.fromisoformat(updated_at))
    return '"' + hashlib.sha256(f"{item_id}\x00{text}".encode()).hexdigest()[:24] + '"'


def view_etag(item_id: str, visible: dict[str, Any]) -> str:
    """The ETag of an item for a masked caller: a digest of what that caller reads of it."""
    text = json.dumps(visible, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return '"' + hashlib.sha256(f"{item_id}\x00view\x00{text}".encode()).hexdigest()[:24] + '"'


def parse_if_match(header: str) -> list[str] | None:
    """The strong tags ``If-Match`` lists (weak ones dropped), or ``None`` for ``*``; 400
    ``VALIDATION_FAILED`` at ``["headers", "If-Match"]`` for a malformed header."""
    value = header.strip()
    if value == "*":
        return None
    if len(value) > MAX_HEADER or not _LIST.fullmatch(value):
        raise ApiError.validation(
            'If-Match must be "*" or a list of entity tags ("...")', path=["headers", "If-Match"]
        )
    return [f'"{m.group(2)}"' for m in _EACH.finditer(value) if not m.group(1)]


def check(tags: list[str] | None, current: str) -> None:
    """412 ``PRECONDITION_FAILED`` unless ``tags`` (``None``: ``*``) holds ``current``, the item's
    tag for the caller (``item_etag`` or ``view_etag``)."""
    if tags is None:
        return
    if current not in tags:
        raise ApiError(
            412,
            "PRECONDITION_FAILED",
            "The item changed since it was read (If-Match does not match its ETag)",
            path=["headers", "If-Match"],
            extensions={"etag": current},
        )
