"""Helpers the schema resources share: the JSON body and query flags."""

from __future__ import annotations

from typing import Any

from kernel.errors import ApiError
from kernel.http.media import read_json


async def read_object(req: Any) -> dict[str, Any]:
    """The JSON object body; absurdly deep nesting is a 400 like any other bad JSON."""
    try:
        return await read_json(req)
    except RecursionError as exc:  # json.loads recurses once per nesting level
        raise ApiError.validation("The body is nested too deeply", path=["body"]) from exc


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
