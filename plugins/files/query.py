"""``GET /files``'s query: the items query language's filter, sort, limit, offset and meta,
compiled for the files table (and the ``media:*`` permission conditions, which are filters too).

The parameters are parsed by the items plugin (``items.api.parse_query``: the bracket and JSON
forms, their coercions and bounds); this module maps the checked filter tree onto the files
table's columns. Fields: ``id``, ``key``, ``title``, ``type``, ``filesize``, ``width``,
``height``, ``checksum``, ``folder``, ``uploadedBy``, ``createdAt``, ``updatedAt``, and
``tags`` (``_eq``/``_contains``: has the tag; ``_in``: has any; ``_null``: has none).
The JSON operators do not apply here (400); so do dotted paths.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import and_, exists, false, func, not_, or_, select, true

from kernel import ApiError
from plugins.files.tables import file_tags, files

COLUMNS: dict[str, Any] = {
    "id": files.c.id, "key": files.c.key, "title": files.c.title, "type": files.c.type,
    "filesize": files.c.filesize, "width": files.c.width, "height": files.c.height,
    "checksum": files.c.checksum, "folder": files.c.folder, "folderId": files.c.folder_id, "uploadedBy": files.c.uploaded_by,
    "createdAt": files.c.created_at, "updatedAt": files.c.updated_at,
}
DATES = frozenset({"createdAt", "updatedAt"})
NUMBERS = frozenset({"filesize", "width", "height"})
FIELDS = (*COLUMNS, "tags")


def _bad(message: str, path: list[Any]) -> ApiError:
    return ApiError.validation(message, path=["query", "filter", *path])


def _value(name: str, value: Any, path: list[Any]) -> Any:
    """A filter operand as the column compares it (dates parsed, numbers checked)."""
    if value is None:
        return None
    if name in DATES:
        if not isinstance(value, str):
            raise _bad(f"'{name}' compares with an ISO 8601 date-time", path)
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _bad(f"'{value[:40]}' is not an ISO 8601 date-time", path) from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    if name in NUMBERS and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise _bad(f"'{name}' compares with a number", path)
    if name not in NUMBERS and not isinstance(value, str):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return value


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _leaf(name: str, op: str, operand: Any, path: list[Any]) -> Any:
    col = COLUMNS[name]
    if op in ("_null", "_nnull"):
        return col.is_(None) if (op == "_null") == bool(operand) else col.is_not(None)
    if op in ("_in", "_nin"):
        values = [_value(name, v, [*path, i]) for i, v in enumerate(operand)]
        clause = col.in_([v for v in values if v is not None])
        if None in values:
            clause = or_(clause, col.is_(None))
        return clause if op == "_in" else not_(clause)
    if op == "_between":
        low, high = (_value(name, v, [*path, i]) for i, v in enumerate(operand))
        return col.between(low, high)
    if op in ("_contains", "_icontains", "_starts_with", "_ends_with"):
        if name in NUMBERS or name in DATES:
            raise _bad(f"'{op}' applies to text fields, not '{name}'", path)
        text = _like(str(operand))
        pattern = {"_starts_with": f"{text}%", "_ends_with": f"%{text}"}.get(op, f"%{text}%")
        if op == "_icontains":
            return func.lower(col).like(pattern.lower(), escape="\\")
        return col.like(pattern, escape="\\")
    value = _value(name, operand, path)
    if op == "_eq":
        return col.is_(None) if value is None else col == value
    if op == "_neq":
        return col.is_not(None) if value is None else or_(col != value, col.is_(None))
    if value is None:
        raise _bad(f"'{op}' takes a value", path)
    return {"_lt": col < value, "_lte": col <= value, "_gt": col > value, "_gte": col >= value}[op]


def _tags(op: str, operand: Any, path: list[Any]) -> Any:
    def has(values: list[str]) -> Any:
        return exists(select(file_tags.c.tag).where(file_tags.c.file_id == files.c.id,
                                                     file_tags.c.site_id == files.c.site_id,
                                                     file_tags.c.tag.in_(values)))
    if op in ("_eq", "_contains"):
        return has([str(operand)])
    if op == "_in":
        return has([str(v) for v in operand])
    if op == "_nin":
        return not_(has([str(v) for v in operand]))
    if op in ("_null", "_nnull"):
        return not_(has_any()) if (op == "_null") == bool(operand) else has_any()
    raise _bad(f"'tags' takes _eq, _contains, _in, _nin, _null or _nnull, not '{op}'", path)


def has_any() -> Any:
    return exists(select(file_tags.c.tag).where(file_tags.c.file_id == files.c.id,
                                                 file_tags.c.site_id == files.c.site_id))


def compile_filter(tree: dict[str, Any] | None, path: list[Any] | None = None) -> Any:
    """The SQL condition of a checked filter tree over ``svc_files`` (400 for what does not apply)."""
    if not tree:
        return true()
    path = path or []
    parts = []
    for key, value in tree.items():
        here = [*path, key]
        if key in ("_and", "_or"):
            kids = [compile_filter(sub, [*here, i]) for i, sub in enumerate(value)]
            parts.append(and_(*kids) if key == "_and" else or_(*kids))
            continue
        if key not in FIELDS:
            raise _bad(f"Files have no field '{key[:60]}'; filter on {', '.join(FIELDS)}", here)
        if not isinstance(value, dict) or not all(k.startswith("_") for k in value):
            raise _bad(f"'{key}' takes operators (files have no nested fields)", here)
        for op, operand in value.items():
            if op in ("_and", "_or") or op.startswith(("_json", "_has")):
                raise _bad(f"'{op}' does not apply to files", [*here, op])
            parts.append(_tags(op, operand, [*here, op]) if key == "tags" else _leaf(key, op, operand, [*here, op]))
    return and_(*parts) if parts else true()


def compile_condition(tree: dict[str, Any] | None) -> Any:
    """A permission rule's condition over files; a condition that does not compile matches
    nothing (fail closed), since it is the site's rule, not the caller's input."""
    try:
        return compile_filter(tree)
    except (ApiError, KeyError, TypeError, ValueError):
        return false()


def compile_sort(sort: list[tuple[str, bool]]) -> list[Any]:
    """ORDER BY of ``sort`` pairs (default newest first); the id breaks ties."""
    out = []
    for name, descending in sort:
        col = COLUMNS.get(name)
        if col is None:
            raise ApiError.validation(f"Files cannot be sorted by '{name[:60]}'", path=["query", "sort"])
        out.append(col.desc() if descending else col.asc())
    if not out:
        out.append(files.c.created_at.desc())
    out.append(files.c.id.desc())
    return out
