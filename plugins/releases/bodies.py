"""Release bodies: ``POST /releases`` and ``PATCH /releases/:id``, checked field by field.

Every problem is 422 ``VALIDATION_FAILED`` (the spec's status for releases) with the path of
the offending value. Pure: no database, no clock but the ``now`` it is given.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from kernel.base.errors import ApiError

MODES = ("all_or_nothing", "best_effort")
STATUSES = ("draft", "scheduled", "published", "partially_failed", "failed", "rolled_back")
# Contentful caps a release at 200 entries and Sanity at 1,000; svc at 1,000 (one transaction
# of 1,000 item updates publishes in seconds on both databases: docs/performance.md).
MAX_ITEMS = 1000
MAX_WINDOWS = 50
NAME_MAX = 200
ITEM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
COLLECTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
STATUS_VALUE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
VERSION_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$")
CREATE_KEYS = frozenset({"name", "atomicityMode", "publishAt", "maintenanceWindow", "addItems"})
PATCH_KEYS = CREATE_KEYS | {"removeItems"}
ENTRY_KEYS = frozenset({"collection", "itemId", "targetStatus", "revisionId", "versionKey"})


def invalid(message: str, path: list[Any]) -> ApiError:
    return ApiError.validation(message, path=path, status=422)


@dataclass(frozen=True)
class Entry:
    """One item of a release: publish ``collection``/``item_id`` with status ``target_status``,
    restoring revision ``revision_id`` or promoting named version ``version_key`` if given."""

    collection: str
    item_id: str
    target_status: str
    revision_id: str | None = None
    version_key: str | None = None


@dataclass
class ReleaseChanges:
    """What a body changes; ``...`` (Ellipsis) for a key the body leaves alone."""

    name: Any = ...
    mode: Any = ...
    publish_at: Any = ...
    window: Any = ...
    add: list[Entry] = field(default_factory=list)
    remove: list[tuple[str, str]] = field(default_factory=list)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > NAME_MAX or "\x00" in value:
        raise invalid(f"'name' is a non-empty string of at most {NAME_MAX} characters", ["name"])
    return value.strip()


def parse_instant(value: Any, path: list[Any], now: dt.datetime) -> dt.datetime | None:
    """An ISO 8601 timestamp with a time zone (or ``Z``), not in the past; None stays None."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise invalid("'publishAt' is an ISO 8601 timestamp with a time zone, or null", path)
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise invalid("'publishAt' is an ISO 8601 timestamp with a time zone, or null", path) from None
    if moment.tzinfo is None:
        raise invalid("'publishAt' needs a time zone (for example 2030-01-01T09:00:00Z)", path)
    moment = moment.astimezone(dt.UTC)
    if moment < now:
        raise invalid("'publishAt' is in the past", path)
    return moment


def minutes(value: str) -> int:
    hours, _, mins = value.partition(":")
    return int(hours) * 60 + int(mins)


def parse_window(value: Any) -> dict[str, Any] | None:
    """``{ windows: [{ dow, start, end }] }``: ``dow`` 0 (Sunday) to 6 (Saturday), ``start`` and
    ``end`` ``HH:MM`` (``end`` may be ``24:00``) with start before end; null clears it."""
    if value is None:
        return None
    path: list[Any] = ["maintenanceWindow"]
    if not isinstance(value, dict) or set(value) != {"windows"}:
        raise invalid("'maintenanceWindow' is { windows: [{ dow, start, end }] } or null", path)
    windows = value["windows"]
    if not isinstance(windows, list) or not 1 <= len(windows) <= MAX_WINDOWS:
        raise invalid(f"'windows' is a list of 1 to {MAX_WINDOWS} windows", [*path, "windows"])
    out = []
    for i, win in enumerate(windows):
        here = [*path, "windows", i]
        if not isinstance(win, dict) or set(win) != {"dow", "start", "end"}:
            raise invalid("A window is { dow, start, end }", here)
        dow = win["dow"]
        if isinstance(dow, bool) or not isinstance(dow, int) or not 0 <= dow <= 6:
            raise invalid("'dow' is an integer from 0 (Sunday) to 6 (Saturday)", [*here, "dow"])
        for key in ("start", "end"):
            if not isinstance(win[key], str) or not HHMM.match(win[key]) or (key == "start" and win[key] == "24:00"):
                raise invalid(f"'{key}' is a time 'HH:MM' (00:00 to 23:59; 'end' may be 24:00)", [*here, key])
        if minutes(win["start"]) >= minutes(win["end"]):
            raise invalid("A window's 'start' is before its 'end' (split a window across midnight in two)",
                          [*here, "end"])
        out.append({"dow": dow, "start": win["start"], "end": win["end"]})
    return {"windows": out}


def _string(value: Any, pattern: re.Pattern[str], message: str, path: list[Any]) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise invalid(message, path)
    return value


def parse_entries(value: Any) -> list[Entry]:
    path: list[Any] = ["addItems"]
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise invalid(f"'addItems' is a list of at most {MAX_ITEMS} entries", path)
    out: list[Entry] = []
    seen: set[tuple[str, str]] = set()
    for i, entry in enumerate(value):
        here = [*path, i]
        if not isinstance(entry, dict):
            raise invalid("An entry is { collection, itemId, targetStatus, revisionId?, versionKey? }", here)
        unknown = sorted(set(entry) - ENTRY_KEYS)
        if unknown:
            raise invalid(f"Unknown key '{unknown[0][:40]}' in an entry", [*here, unknown[0][:40]])
        collection = _string(entry.get("collection"), COLLECTION, "'collection' names a collection",
                             [*here, "collection"])
        item_id = entry.get("itemId")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)
        item_id = _string(item_id, ITEM_ID, "'itemId' is an item id", [*here, "itemId"])
        target = _string(entry.get("targetStatus"), STATUS_VALUE, "'targetStatus' is a status value such as "
                         "'published' (1 to 40 letters, digits, '_' or '-')", [*here, "targetStatus"])
        revision = entry.get("revisionId")
        if revision is not None:
            revision = _string(revision, ITEM_ID, "'revisionId' is a revision id or null", [*here, "revisionId"])
        version = entry.get("versionKey")
        if version is not None:
            version = _string(version, VERSION_KEY, "'versionKey' is a version key or null", [*here, "versionKey"])
        if revision is not None and version is not None:
            raise invalid("An entry pins a revision or a version, not both", [*here, "versionKey"])
        if (collection, item_id) in seen:
            raise invalid("The same item is listed twice", here)
        seen.add((collection, item_id))
        out.append(Entry(collection, item_id, target, revision, version))
    return out


def parse_removals(value: Any) -> list[tuple[str, str]]:
    path: list[Any] = ["removeItems"]
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise invalid(f"'removeItems' is a list of at most {MAX_ITEMS} entries", path)
    out = []
    for i, entry in enumerate(value):
        here = [*path, i]
        if not isinstance(entry, dict) or set(entry) - {"collection", "itemId"}:
            raise invalid("A removal is { collection, itemId }", here)
        item_id = entry.get("itemId")
        if isinstance(item_id, int) and not isinstance(item_id, bool):
            item_id = str(item_id)
        out.append((_string(entry.get("collection"), COLLECTION, "'collection' names a collection",
                            [*here, "collection"]),
                    _string(item_id, ITEM_ID, "'itemId' is an item id", [*here, "itemId"])))
    return out


def parse_body(body: Any, *, creating: bool, now: dt.datetime) -> ReleaseChanges:
    """The checked changes of a create (``creating``) or patch body."""
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object", ["body"])
    unknown = sorted(set(body) - (CREATE_KEYS if creating else PATCH_KEYS))
    if unknown:
        raise invalid(f"Unknown field '{unknown[0][:40]}'", [unknown[0][:40]])
    out = ReleaseChanges()
    if creating or "name" in body:
        out.name = _name(body.get("name"))
    if creating or "atomicityMode" in body:
        mode = body.get("atomicityMode", "all_or_nothing" if creating else None)
        if mode not in MODES:
            raise invalid(f"'atomicityMode' is one of {', '.join(MODES)}", ["atomicityMode"])
        out.mode = mode
    if "publishAt" in body:
        out.publish_at = parse_instant(body["publishAt"], ["publishAt"], now)
    if "maintenanceWindow" in body:
        out.window = parse_window(body["maintenanceWindow"])
    if "addItems" in body:
        out.add = parse_entries(body["addItems"])
    if "removeItems" in body:
        out.remove = parse_removals(body["removeItems"])
    return out
