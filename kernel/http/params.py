"""Query-string parsing shared by list endpoints."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError


def int_param(req: Any, name: str, default: int | None = None, *, minimum: int | None = None,
              maximum: int | None = None) -> int | None:
    """An integer query parameter, range-checked, with a ``path`` in the error."""
    raw = req.get_param(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ApiError.validation(f"'{name}' must be an integer", path=["query", name]) from exc
    if minimum is not None and value < minimum:
        raise ApiError.validation(f"'{name}' must be at least {minimum}", path=["query", name])
    if maximum is not None and value > maximum:
        raise ApiError.validation(f"'{name}' must be at most {maximum}", path=["query", name])
    return value


def pagination(req: Any, *, default_limit: int = 25, max_limit: int = 200) -> tuple[int, int]:
    """``(limit, offset)`` from ``limit`` and ``offset`` or ``page`` (1-indexed)."""
    limit = int_param(req, "limit", default_limit, minimum=1, maximum=max_limit)
    assert limit is not None
    page = int_param(req, "page", None, minimum=1, maximum=10_000_000)
    offset = int_param(req, "offset", None, minimum=0, maximum=2**31)
    if offset is None:
        offset = (page - 1) * limit if page else 0
    return limit, offset


def page_meta(total: int, limit: int, offset: int) -> dict[str, int]:
    return {"total": total, "limit": limit, "offset": offset, "page": offset // limit + 1, "pageSize": limit}
