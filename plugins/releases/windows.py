"""Maintenance windows: when a due release may publish, in the site's time zone.

``{ windows: [{ dow, start, end }] }``: ``dow`` 0 is Sunday (as cron and JavaScript count),
``start``/``end`` are local wall-clock times ``HH:MM`` (``end`` may be ``24:00``). A release due
outside every window waits for the next window's start. Pure functions over aware datetimes.
A window is open when the local wall clock reads a time inside it: across a DST change a
window may open when the clock jumps into it, and the repeated hour of an autumn change may
hold it open twice.
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


def is_open(window: dict[str, Any], moment: dt.datetime, tz: ZoneInfo) -> bool:
    """Whether the local wall clock at ``moment`` is inside one of the windows of its weekday."""
    local = moment.astimezone(tz)
    dow, minute = _dow(local.date()), local.hour * 60 + local.minute
    return any(w["dow"] == dow and minutes(w["start"]) <= minute < minutes(w["end"]) for w in window["windows"])


def _transitions(tz: ZoneInfo, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """The instants (whole seconds) between ``start`` and ``end`` where ``tz``'s offset changes."""
    out = []
    hour = dt.timedelta(hours=1)
    t = start.replace(microsecond=0)
    while t < end:
        before = t.astimezone(tz).utcoffset()
        if before != (t + hour).astimezone(tz).utcoffset():
            lo, hi = 0, 3600  # seconds after t: the old offset at lo, the new one at hi
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if (t + dt.timedelta(seconds=mid)).astimezone(tz).utcoffset() == before:
                    lo = mid
                else:
                    hi = mid
            out.append(t + dt.timedelta(seconds=hi))
        t += hour
    return out


def next_opening(window: dict[str, Any] | None, now: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    """``now`` if a window is open at ``now`` (or there is no window), else the first moment
    (UTC) after it when one opens.

    Openness follows the local wall clock, so it can only begin where the clock reaches a
    window's start (each occurrence: a repeated hour has two) or where a DST change makes the
    clock jump into a window; the answer is the earliest such moment at which a window is open.
    """
    if not window or not window.get("windows"):
        return now
    if is_open(window, now, tz):
        return now
    local_today = now.astimezone(tz).date()
    candidates: list[dt.datetime] = []
    for offset in range(-1, 9):
        day = local_today + dt.timedelta(days=offset)
        for win in window["windows"]:
            if win["dow"] != _dow(day):
                continue
            total = minutes(win["start"])
            wall = dt.datetime(day.year, day.month, day.day, total // 60, total % 60)
            candidates += [wall.replace(tzinfo=tz, fold=fold).astimezone(dt.UTC) for fold in (0, 1)]
    candidates += _transitions(tz, now - dt.timedelta(days=1), now + dt.timedelta(days=9))
    found = [c for c in candidates if c > now and is_open(window, c, tz)]
    # Every weekday comes round within eight days, so some start in range is open.
    return min(found) if found else now
