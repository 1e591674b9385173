"""The bodies of ``/dashboards``: dashboard ``{ name, icon?, color?, note? }``, panel ``{ name,
type, position, query }`` and the PanelQuery (docs/dashboards.md, Bodies). Pure checks, no I/O:
every fault is 400 ``VALIDATION_FAILED`` with the path of the bad key.

A PanelQuery is ``{ collection, aggregate, field?, groupBy?, filter?, dateRange?, limit? }``:
``aggregate`` one of ``count``, ``sum``, ``avg``, ``min``, ``max``; ``field`` required except for
``count`` (``count`` with a field counts its non-null values); ``groupBy`` a list of at most
``MAX_GROUPS`` field names or dotted paths (a string is one name); ``filter`` a filter object as
``/items`` takes it; ``dateRange`` ``{ field, interval: day|week|month, from?, to? }`` (``from``
inclusive, ``to`` exclusive, ISO 8601 dates or date-times); ``limit`` 1 to 200 (default 100).
Whether the names exist and may be read is the run's question (``panels.py``), not this one's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import reject_unknown
from kernel.policy.filtergrammar import FilterGrammar

PANEL_TYPES = ("metric", "list", "time-series", "bar-chart", "pie-chart", "label")
AGGREGATES = ("count", "sum", "avg", "min", "max")
INTERVALS = ("day", "week", "month")
MAX_GROUPS = 3
MAX_LIMIT = 200
DEFAULT_LIMIT = 100
GRID_MAX = 10_000  # x, y at most this; w, h 1 to GRID_SPAN
GRID_SPAN = 1_000
LIMITS = {"name": 200, "icon": 64, "color": 32, "note": 5_000}
DASHBOARD_KEYS = frozenset({"name", "icon", "color", "note"})
PANEL_KEYS = frozenset({"name", "type", "position", "query"})
QUERY_KEYS = frozenset({"collection", "aggregate", "field", "groupBy", "filter", "dateRange", "limit"})
RANGE_KEYS = frozenset({"field", "interval", "from", "to"})
_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}(\.[A-Za-z0-9_]{1,64}){0,7}$")
_COLLECTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|z|[+-]\d{2}:?\d{2})?)?$")


@dataclass(frozen=True)
class DateRange:
    field: str
    interval: str
    start: str | None = None
    end: str | None = None


@dataclass(frozen=True)
class PanelQuery:
    """A checked PanelQuery; ``to_json()`` is what is stored and cached by."""

    collection: str
    aggregate: str
    field: str | None = None
    group_by: tuple[str, ...] = ()
    filter: dict[str, Any] | None = None
    date_range: DateRange | None = None
    limit: int = DEFAULT_LIMIT

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"collection": self.collection, "aggregate": self.aggregate, "field": self.field,
                               "groupBy": list(self.group_by), "filter": self.filter, "limit": self.limit,
                               "dateRange": None}
        if self.date_range is not None:
            r = self.date_range
            out["dateRange"] = {"field": r.field, "interval": r.interval, "from": r.start, "to": r.end}
        return out


def invalid(message: str, path: list[Any]) -> ApiError:
    return ApiError.validation(message, path=path)


def _text(body: dict[str, Any], key: str, path: list[Any], *, required: bool) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise invalid(f"'{key}' is required", [*path, key])
        return None
    limit = LIMITS[key]
    if not isinstance(value, str) or not value.strip() or len(value) > limit or "\x00" in value:
        raise invalid(f"'{key}' must be a non-empty string of at most {limit} characters", [*path, key])
    return value


def dashboard_values(body: Any, *, partial: bool) -> dict[str, Any]:
    """The columns of a dashboard body (``partial``: a PATCH, only the keys given)."""
    _object(body, [])
    reject_unknown(body, DASHBOARD_KEYS)
    out: dict[str, Any] = {}
    for key in ("name", "icon", "color", "note"):
        if partial and key not in body:
            continue
        if key == "name" and partial and body.get("name") is None:
            raise invalid("'name' cannot be removed", ["name"])
        out[key] = _text(body, key, [], required=key == "name")
    return out


def panel_values(body: Any, *, partial: bool) -> dict[str, Any]:
    """The columns of a panel body (``query`` as a ``PanelQuery`` or ``None`` for a label)."""
    _object(body, [])
    reject_unknown(body, PANEL_KEYS)
    out: dict[str, Any] = {}
    if not partial or "name" in body:
        out["name"] = _text(body, "name", [], required=True)
    if not partial or "type" in body:
        if body.get("type") not in PANEL_TYPES:
            raise invalid(f"'type' must be one of {', '.join(PANEL_TYPES)}", ["type"])
        out["type"] = body["type"]
    if not partial or "position" in body:
        out["position"] = position(body.get("position"), ["position"])
    if not partial or "query" in body:
        out["query"] = None if body.get("query") is None else panel_query(body["query"], ["query"])
    return out


def check_query_for_type(panel_type: str, query: PanelQuery | None) -> None:
    """A ``label`` panel shows its name and has no query; every other type needs one."""
    if panel_type == "label" and query is not None:
        raise invalid("A label panel has no query", ["query"])
    if panel_type != "label" and query is None:
        raise invalid(f"A {panel_type} panel needs a query", ["query"])


def position(value: Any, path: list[Any]) -> dict[str, int]:
    """``{ x, y, w, h }``: whole numbers, ``x``/``y`` 0 to ``GRID_MAX``, ``w``/``h`` 1 to ``GRID_SPAN``."""
    _object(value, path, what="'position' must be an object { x, y, w, h }")
    reject_unknown_at(value, frozenset("xywh"), path)
    out = {}
    for key in "xywh":
        v = value.get(key)
        low, high = (0, GRID_MAX) if key in "xy" else (1, GRID_SPAN)
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            raise invalid(f"'position.{key}' must be a whole number from {low} to {high}", [*path, key])
        out[key] = v
    return out


def panel_query(value: Any, path: list[Any]) -> PanelQuery:
    """A checked PanelQuery (``path``: where it sits in the body, ``[]`` for a preview)."""
    _object(value, path, what="A panel query must be an object")
    reject_unknown_at(value, QUERY_KEYS, path)
    collection = value.get("collection")
    if not isinstance(collection, str) or not _COLLECTION.fullmatch(collection):
        raise invalid("'collection' must be a collection name", [*path, "collection"])
    aggregate = value.get("aggregate")
    if aggregate not in AGGREGATES:
        raise invalid(f"'aggregate' must be one of {', '.join(AGGREGATES)}", [*path, "aggregate"])
    name = value.get("field")
    if name is None and aggregate != "count":
        raise invalid(f"'field' is required for '{aggregate}'", [*path, "field"])
    if name is not None and (not isinstance(name, str) or "." in name or not _NAME.fullmatch(name)):
        raise invalid("'field' must be a field name", [*path, "field"])
    groups = _group_by(value.get("groupBy"), [*path, "groupBy"])
    tree = value.get("filter")
    if tree is not None:
        tree = FilterGrammar([*path, "filter"]).check(tree) if tree != {} else None
    date_range = _date_range(value.get("dateRange"), [*path, "dateRange"])
    limit = value.get("limit", DEFAULT_LIMIT)
    if limit is None:
        limit = DEFAULT_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise invalid(f"'limit' must be a whole number from 1 to {MAX_LIMIT}", [*path, "limit"])
    return PanelQuery(collection, aggregate, name, groups, tree, date_range, limit)


def query_from_json(stored: dict[str, Any]) -> PanelQuery:
    """The ``PanelQuery`` of a stored panel (checked when it was written)."""
    return panel_query({k: v for k, v in stored.items() if v is not None}, ["query"])


def _group_by(value: Any, path: list[Any]) -> tuple[str, ...]:
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or len(names) > MAX_GROUPS:
        raise invalid(f"'groupBy' must be a field name or a list of at most {MAX_GROUPS}", path)
    for i, name in enumerate(names):
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise invalid("'groupBy' takes field names or dotted paths", [*path, i])
    return tuple(dict.fromkeys(names))


def _date_range(value: Any, path: list[Any]) -> DateRange | None:
    if value is None:
        return None
    _object(value, path, what="'dateRange' must be an object { field, interval, from?, to? }")
    reject_unknown_at(value, RANGE_KEYS, path)
    name = value.get("field")
    if not isinstance(name, str) or "." in name or not _NAME.fullmatch(name):
        raise invalid("'dateRange.field' must be a field name", [*path, "field"])
    if value.get("interval") not in INTERVALS:
        raise invalid(f"'dateRange.interval' must be one of {', '.join(INTERVALS)}", [*path, "interval"])
    bounds = []
    for key in ("from", "to"):
        bound = value.get(key)
        if bound is not None and (not isinstance(bound, str) or not _INSTANT.fullmatch(bound)):
            raise invalid(f"'dateRange.{key}' must be an ISO 8601 date or date-time", [*path, key])
        bounds.append(bound)
    return DateRange(name, value["interval"], bounds[0], bounds[1])


def _object(value: Any, path: list[Any], what: str = "The body must be a JSON object") -> None:
    if not isinstance(value, dict):
        raise invalid(what, path)


def reject_unknown_at(value: dict[str, Any], allowed: frozenset[str], path: list[Any]) -> None:
    """``reject_unknown`` for a nested object: the error's path starts at ``path``."""
    try:
        reject_unknown(value, allowed)
    except ApiError as exc:
        detail = exc.details[0]
        raise invalid(detail.message, [*path, *(detail.path or [])]) from None
