"""How svc writes a datetime in JSON: ISO 8601 in UTC with a ``Z``.

A module of its own, with nothing but the standard library, so that ``kernel.http.media`` (the
JSON answers) and ``kernel.db.meta`` (the tables) share it without importing each other: an
extension's runner writes JSON without loading SQLAlchemy (docs/decisions/extension-runners.md).
"""

from __future__ import annotations

import datetime as dt


def iso(value: dt.datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z``; SQLite hands back naive datetimes, which are UTC here."""
    if value is None:
        return None
    if value.tzinfo is not None:
        if value.utcoffset():
            value = value.astimezone(dt.UTC)
        value = value.replace(tzinfo=None)
    return value.isoformat() + "Z"  # a list shapes two per item: the short way for UTC
