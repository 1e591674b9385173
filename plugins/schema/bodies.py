"""Small checks shared by the collection, field and relation bodies; each 400s with a path."""

from __future__ import annotations

import json
from typing import Any

from kernel.base.errors import ApiError
from plugins.schema.fieldtypes import types


def merge_meta(body: dict[str, Any], flat_keys: set[str] | frozenset[str],
               meta_keys: set[str] | frozenset[str]) -> dict[str, tuple[Any, list[Any]]]:
    """The values given flat (``{icon}``) or Directus-style under ``meta`` (``{meta: {icon}}``).

    Returns ``{key: (value, path)}``. The same key in both places must carry the same value:
    a client that sends two different answers gets a 400 rather than a silent pick.
    """
    meta = body.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise ApiError.validation("'meta' must be an object", path=["meta"])
    out: dict[str, tuple[Any, list[Any]]] = {}
    for key, value in (meta or {}).items():
        if key not in meta_keys:
            raise ApiError.validation(f"Unknown meta key '{key}'", path=["meta", key])
        out[key] = (value, ["meta", key])
    for key in flat_keys:
        if key in body:
            if key in out and out[key][0] != body[key]:
                raise ApiError.validation(f"'{key}' is given flat and in 'meta' with different values",
                                          path=[key])
            out[key] = (body[key], [key])
    return out


def reject_unknown(body: dict[str, Any], allowed: set[str] | frozenset[str]) -> None:
    """A 400 at the first key outside ``allowed`` (no mass assignment)."""
    for key in body:
        if key not in allowed:
            raise ApiError.validation(f"Unknown field '{key}'", path=[key])


def same_name(body: dict[str, Any], keys: tuple[str, ...], current: str | None) -> str | None:
    """The name given under any of ``keys`` (they must agree, and match ``current`` if set)."""
    given = [(k, body[k]) for k in keys if body.get(k) is not None]
    for key, value in given:
        if value != given[0][1]:
            raise ApiError.validation(f"'{key}' and '{given[0][0]}' name different things", path=[key])
        if current is not None and value != current:
            raise ApiError.validation(f"'{key}' cannot be changed (it is '{current}')", path=[key])
    return given[0][1] if given else None


def text_or_null(value: Any, path: list[Any], max_length: int) -> str | None:
    """A string of at most ``max_length`` characters (no NUL), or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > max_length or "\x00" in value:
        raise ApiError.validation(f"Must be a string of at most {max_length} characters, or null", path=path)
    return value


def boolean(value: Any, path: list[Any]) -> bool:
    """A JSON boolean, strictly (no ``"true"``, no ``1``)."""
    if not isinstance(value, bool):
        raise ApiError.validation("Must be true or false", path=path)
    return value


def integer(value: Any, path: list[Any], low: int, high: int) -> int:
    """A JSON integer within ``[low, high]`` (booleans are not integers)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError.validation(f"Must be an integer within [{low}, {high}]", path=path)
    return value


def small_json(value: Any, path: list[Any], max_bytes: int) -> Any:
    """Any JSON value of at most ``max_bytes`` once serialised (opaque UI settings)."""
    try:
        value = types.check_json(value)
        size = len(json.dumps(value, separators=(",", ":")))
    except (ValueError, RecursionError) as exc:
        raise ApiError.validation(f"Not storable JSON: {exc}", path=path) from exc
    if size > max_bytes:
        raise ApiError.validation(f"Larger than {max_bytes} bytes", path=path)
    return value


def conflict(message: str, path: list[Any]) -> ApiError:
    """409 ``CONFLICT`` pointing at the input that collides."""
    return ApiError(409, "CONFLICT", message, path=path)
