"""GeoJSON geometry validation (RFC 7946) for the ``geometry`` field type. Pure functions."""

from __future__ import annotations

import math
from typing import Any

GEOMETRY_TYPES = ("Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon",
                  "GeometryCollection")
# A bound on work per value: a body is capped anyway, but a geometry with millions of
# positions would make every item write slow.
MAX_POSITIONS = 100_000
MAX_COLLECTION_DEPTH = 4


def _position(value: Any, counter: list[int]) -> list[float]:
    if not isinstance(value, list) or not 2 <= len(value) <= 3:
        raise ValueError("a position must be an array of 2 or 3 numbers")
    out = []
    for n in value:
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n):
            raise ValueError("a position holds finite numbers only")
        out.append(n)
    if not -180 <= out[0] <= 180 or not -90 <= out[1] <= 90:
        raise ValueError("longitude must be within [-180, 180] and latitude within [-90, 90]")
    counter[0] += 1
    if counter[0] > MAX_POSITIONS:
        raise ValueError(f"a geometry may hold at most {MAX_POSITIONS} positions")
    return out


def _positions(value: Any, counter: list[int], minimum: int) -> list[list[float]]:
    if not isinstance(value, list) or len(value) < minimum:
        raise ValueError(f"expected an array of at least {minimum} positions")
    return [_position(p, counter) for p in value]


def _ring(value: Any, counter: list[int]) -> list[list[float]]:
    ring = _positions(value, counter, 4)
    if ring[0] != ring[-1]:
        raise ValueError("a polygon ring must be closed (first and last positions equal)")
    return ring


def _polygon(value: Any, counter: list[int]) -> list[list[list[float]]]:
    if not isinstance(value, list) or not value:
        raise ValueError("a polygon is an array of at least one linear ring")
    return [_ring(r, counter) for r in value]


def _many(value: Any, each: Any, counter: list[int]) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("expected an array")
    return [each(v, counter) for v in value]


def _coordinates(kind: str, coords: Any, counter: list[int]) -> Any:
    if kind == "Point":
        return _position(coords, counter)
    if kind == "MultiPoint":
        return _positions(coords, counter, 0)
    if kind == "LineString":
        return _positions(coords, counter, 2)
    if kind == "MultiLineString":
        return _many(coords, lambda v, c: _positions(v, c, 2), counter)
    if kind == "Polygon":
        return _polygon(coords, counter)
    return _many(coords, _polygon, counter)  # MultiPolygon


def validate_geometry(value: Any, allowed: str | None = None, *, _depth: int = 0,
                      _counter: list[int] | None = None) -> dict[str, Any]:
    """A GeoJSON geometry object, normalised to ``type`` and ``coordinates`` (or ``geometries``).

    ``allowed`` restricts the top-level type (the field option ``geometryType``).
    """
    counter = _counter if _counter is not None else [0]
    if not isinstance(value, dict):
        raise ValueError("a geometry must be a GeoJSON object")
    kind = value.get("type")
    if kind not in GEOMETRY_TYPES:
        raise ValueError(f"a geometry's type must be one of {', '.join(GEOMETRY_TYPES)}")
    if allowed and _depth == 0 and kind != allowed:
        raise ValueError(f"this field holds {allowed} geometries only")
    if kind == "GeometryCollection":
        members = value.get("geometries")
        if not isinstance(members, list):
            raise ValueError("a GeometryCollection needs a 'geometries' array")
        if _depth >= MAX_COLLECTION_DEPTH:
            raise ValueError("GeometryCollections are nested too deeply")
        return {"type": kind, "geometries": [
            validate_geometry(m, None, _depth=_depth + 1, _counter=counter) for m in members]}
    if "coordinates" not in value:
        raise ValueError(f"a {kind} needs 'coordinates'")
    return {"type": kind, "coordinates": _coordinates(kind, value["coordinates"], counter)}
