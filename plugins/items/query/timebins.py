"""Time buckets in ``groupBy``: ``trunc_day(f)``, ``trunc_week(f)``, ``trunc_month(f)``.

A bucket name groups a date field (``date``, ``dateTime``, ``timestamp``, or the structural
``createdAt``/``updatedAt``) by the first day of its day, ISO week (Monday) or month, answered as
``YYYY-MM-DD`` text under the name as written (``{"trunc_month(publishedAt)": "2026-03-01",
"count": 4}``). Stored date-times are UTC text (aware values) or wall-clock text (naive
``dateTime``), so the bucket is taken from the stored text's date part on both dialects: SQLite
and PostgreSQL answer the same buckets by construction (no session time zone is involved).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Date, Text, cast, func, literal_column, type_coerce

from kernel.base.errors import ApiError
from plugins.items.query.ir import Target
from plugins.items.query.sql import sqlexpr as sx

UNITS = ("day", "week", "month")
_BUCKET = re.compile(r"^trunc_(day|week|month)\(([^()]{1,600})\)$")
_DATED = frozenset({"date", "dateTime", "timestamp"})


def split_bucket(name: str) -> tuple[str | None, str]:
    """``("month", "publishedAt")`` for ``trunc_month(publishedAt)``; ``(None, name)`` otherwise."""
    found = _BUCKET.match(name)
    return (found.group(1), found.group(2)) if found else (None, name)


def bucket_name(unit: str, name: str) -> str:
    """The ``groupBy`` name of ``unit`` buckets of field ``name``."""
    return f"trunc_{unit}({name})"


def bucket_expr(dialect: str, t: Any, target: Target, unit: str, path: list[Any]) -> Any:
    """The ``YYYY-MM-DD`` text of the first day of ``target``'s ``unit`` (400 for other types)."""
    if not (target.category == "instant" or (target.category == "temporal" and target.type in _DATED)):
        raise ApiError.validation(f"'trunc_{unit}' takes a date or date-time field; '{target.label}' is "
                                  f"{target.type}", path=path)
    value = sx.scalar_expr(dialect, t, target)
    if target.category == "instant" and dialect == sx.PG:
        day = func.to_char(value.op("AT TIME ZONE")(literal_column("'UTC'")), "YYYY-MM-DD")
    else:
        day = func.substr(value, 1, 10)
    if unit == "day":
        return day
    if unit == "month":
        return type_coerce(func.substr(day, 1, 7), Text) + "-01"
    if dialect == sx.PG:
        return func.to_char(func.date_trunc("week", cast(day, Date)), "YYYY-MM-DD")
    # SQLite: 'weekday 0' moves forward to Sunday (or stays on one), six days back is its Monday.
    return cast(func.date(day, "weekday 0", "-6 days"), Text)
