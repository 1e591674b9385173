"""Maintenance windows: when a due release may publish, in the site's time zone.

``{ windows: [{ dow, start, end }] }``: ``dow`` 0 is Sunday (as cron and JavaScript count),
``start``/``end`` are local wall-clock times ``HH:MM`` (``end`` may be ``24:00``). A release due
outside every window waits for the next window's start. Pure functions over aware datetimes;
local times that a DST change skips or repeats are resolved by ``zoneinfo`` (fold 0).
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from plugins.releases.bodies import minutes

TIMEZONE_SETTING = "releases.timezone"
DEFAULT_TIMEZONE = "UTC"


def validate_timezone(value: Any) -> str:
    """The ``releases.timezone`` setting: an IANA zone name such as ``Europe/Berlin``."""
    if not isinstance(value, str) or not 1 <= len(value) <= 64:
        raise ValueError("an IANA time zone name such as 'Europe/Berlin'")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone '{value[:64]}'") from None
    return value


def zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or DEFAULT_TIMEZONE)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo(DEFAULT_TIMEZONE)


def _dow(day: dt.date) -> int:
    return (day.weekday() + 1) % 7  # Python's Monday=0 to Sunday=0


def _at(day: dt.date, hhmm: str, tz: ZoneInfo) -> dt.datetime:
    total = minutes(hhmm)
    base = dt.datetime(day.year, day.month, day.day, tzinfo=tz)
    if total >= 24 * 60:
        nxt = day + dt.timedelta(days=1)
        return dt.datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz)
    return base.replace(hour=total // 60, minute=total % 60)


def next_opening(window: dict[str, Any] | None, now: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    """``now`` if a window is open at ``now`` (or there is no window), else the start (UTC) of
    the next window."""
    if not window or not window.get("windows"):
        return now
    local_today = now.astimezone(tz).date()
    best: dt.datetime | None = None
    for offset in range(-1, 8):
        day = local_today + dt.timedelta(days=offset)
        for win in window["windows"]:
            if win["dow"] != _dow(day):
                continue
            start, end = _at(day, win["start"], tz), _at(day, win["end"], tz)
            if start <= now < end:
                return now
            if start >= now and (best is None or start < best):
                best = start
    assert best is not None  # every weekday occurs within eight days
    return best.astimezone(dt.UTC)
