"""Date and time field types: dateTime, timestamp, date, time, as normalised ISO 8601 strings.

An aware date-time is stored in UTC with ``Z`` so stored values sort as text; a ``dateTime``
without an offset stays naive (a wall-clock time), a ``timestamp`` without one is read as UTC.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|z|[+-]\d{2}:?\d{2})?$")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise ValueError(f"expected {what}")
    return value


def _iso_datetime(value: Any, assume_utc: bool) -> str:
    text = _text(value, "an ISO 8601 date-time string")
    if not _DATETIME.match(text):
        raise ValueError("expected an ISO 8601 date-time like 2024-05-01T12:30:00Z")
    try:
        parsed = dt.datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError as exc:
        raise ValueError(f"not a valid date-time: {exc}") from exc
    if parsed.tzinfo is None and assume_utc:
        parsed = parsed.replace(tzinfo=dt.UTC)
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(dt.UTC)
        except OverflowError as exc:
            raise ValueError("the date-time is out of range") from exc
        return parsed.replace(tzinfo=None).isoformat() + "Z"
    return parsed.isoformat()


def check_datetime(value: Any, options: Mapping[str, Any]) -> str:
    """An ISO 8601 date-time; with an offset it is stored in UTC with ``Z``, without one as given."""
    return _iso_datetime(value, assume_utc=False)


def check_timestamp(value: Any, options: Mapping[str, Any]) -> str:
    """An ISO 8601 instant, stored in UTC with ``Z`` (no offset means UTC)."""
    return _iso_datetime(value, assume_utc=True)


def check_date(value: Any, options: Mapping[str, Any]) -> str:
    """A calendar date ``YYYY-MM-DD``."""
    text = _text(value, "an ISO 8601 date string")
    if not _DATE.match(text):
        raise ValueError("expected a date like 2024-05-01")
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError as exc:
        raise ValueError(f"not a valid date: {exc}") from exc


def check_time(value: Any, options: Mapping[str, Any]) -> str:
    """A time of day ``HH:MM[:SS[.ffffff]]`` without an offset; stored as ``HH:MM:SS``."""
    text = _text(value, "a time string")
    if not _TIME.match(text):
        raise ValueError("expected a time like 13:45 or 13:45:30")
    try:
        return dt.time.fromisoformat(text).isoformat()
    except ValueError as exc:
        raise ValueError(f"not a valid time: {exc}") from exc
