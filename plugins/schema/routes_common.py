"""Helpers the schema resources share: query flags."""

from __future__ import annotations

from typing import Any

from kernel.errors import ApiError


def flag_param(req: Any, name: str) -> bool:
    """A boolean query parameter (``true``/``false``/``1``/``0``; absent is false)."""
    raw = req.get_param(name)
    if raw is None or raw == "":
        return False
    lowered = raw.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ApiError.validation(f"'{name}' must be true or false", path=["query", name])
