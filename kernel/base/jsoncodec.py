"""The JSON codec of svc: ``dumps`` and ``loads`` on orjson, with the standard library's answers.

orjson does the work; where it would answer differently from the standard library (``NaN``/
``Infinity`` and numbers beyond a double, integers of 19 digits or more, lone surrogates, invalid
UTF-8, integer dict keys), the standard library does, so what is accepted, refused, and the error
messages stay as they were. Output is compact (no spaces after ``,`` and ``:``). A ``datetime`` is
written as ``kernel.base.timestamps.iso`` writes it (UTC with ``Z``: ``2026-11-21T06:44:52.780366Z``).

The base floor: request bodies and responses (``kernel.http.media``), the database's JSON columns
(``kernel.db.engine``) and the bus's payloads all use it, so none of them imports another for it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import orjson

from kernel.base.timestamps import iso


def encodable(value: str) -> bool:
    """Whether UTF-8 can carry ``value`` (a lone surrogate cannot)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# orjson reads integers beyond 64 bits as floats; the standard library keeps them exact. A
# document with a run of 19 digits or more goes to the standard library: found by mapping every
# digit to "0" and the rest to " " (one C pass) and looking for nineteen "0"s, about 1 us for an
# item of 700 bytes where a regular expression took 20 to 30.
_DIGIT_RUNS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_RUN = b"0" * 19
_DUMP_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME


def _default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return iso(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (datetimes as ``iso``); TypeError for what JSON cannot hold."""
    try:
        return orjson.dumps(value, default=_default, option=_DUMP_OPTIONS)
    except orjson.JSONEncodeError:  # integers beyond 64 bits, non-string keys: as the stdlib does
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_default).encode()


def loads(raw: bytes | bytearray | memoryview | str) -> Any:
    """The value of a JSON document, exactly as ``json.loads`` reads it, with its errors
    (``ValueError``, ``UnicodeDecodeError``, ``RecursionError``). Also the database's JSON
    decoder (``kernel.db.engine``: item ``data`` on both dialects)."""
    if isinstance(raw, memoryview):
        raw = raw.tobytes()
    if isinstance(raw, str):
        octets = raw.encode("utf-8", "surrogatepass")
    elif isinstance(raw, bytes | bytearray):
        octets = raw
    else:  # not a document (SQLite hands a JSON column's number back as one): the stdlib's TypeError
        return json.loads(raw)  # type: ignore[arg-type]
    if _LONG_RUN not in octets.translate(_DIGIT_RUNS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # refused, or NaN/Infinity that the stdlib reads: let it answer
    return json.loads(raw)


# A lone surrogate can only arrive as a \\u escape (its UTF-8 bytes would not decode).
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _first_path(value: Any, bad: Any) -> list[str | int] | None:
    """The path to the first string (or object key) of ``value`` for which ``bad`` is true."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if bad(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if bad(key):
                    return [*path, key.encode("utf-8", "backslashreplace").decode()]
                stack.append((child, [*path, key]))
        elif isinstance(item, list):
            stack.extend((child, [*path, i]) for i, child in enumerate(item))
    return None


def lone_surrogate_path(value: Any) -> list[str | int] | None:
    """The path to the first string (or object key) of ``value`` holding a lone surrogate,
    which UTF-8, and so no database, log or answer, can carry; None when there is none."""
    return _first_path(value, lambda text: not encodable(text))


def nul_path(value: Any) -> list[str | int] | None:
    """The path to the first string (or object key) of ``value`` holding a NUL character, which
    PostgreSQL stores in neither text nor JSONB; None when there is none. A route that keeps a
    free-form JSON value refuses it (400) where the value's own checks do not."""
    return _first_path(value, lambda text: "\x00" in text)
