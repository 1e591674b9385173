"""An item as the API shows it: structural columns plus the content fields, flat.

``item_record(row)`` builds it from a ``svc_items`` row; ``mask(item, decision)`` drops what the
principal may not read; ``project(item, names)`` keeps what ``?fields=`` asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kernel.db.meta import iso
from plugins.items.tables import items

# API name -> column, for every structural column an item shows.
STRUCTURAL_COLUMNS: dict[str, Any] = {
    "id": items.c.id,
    "status": items.c.status,
    "sort": items.c.sort,
    "createdAt": items.c.created_at,
    "updatedAt": items.c.updated_at,
    "userCreated": items.c.user_created,
    "userUpdated": items.c.user_updated,
}
STRUCTURAL = tuple(STRUCTURAL_COLUMNS)
# Structural keys a client may send; the others are maintained by the server.
WRITABLE_STRUCTURAL = frozenset({"status", "sort"})
SERVER_MAINTAINED = frozenset({"createdAt", "updatedAt", "userCreated", "userUpdated", "deletedAt", "_data"})


def item_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """The item's API shape: structural keys first, then the content of ``data``."""
    out: dict[str, Any] = {
        "id": row["id"],
        "status": row["status"],
        "sort": row["sort"],
        "createdAt": iso(row["created_at"]),
        "updatedAt": iso(row["updated_at"]),
        "userCreated": row["user_created"],
        "userUpdated": row["user_updated"],
    }
    data = row["data"] or {}
    for key, value in data.items():
        if key not in out:  # content can never shadow a structural key (names forbid it anyway)
            out[key] = value
    return out


def mask(item: dict[str, Any], readable: frozenset[str] | None) -> dict[str, Any]:
    """``item`` without the keys outside ``readable`` (``None``: everything is readable).

    ``id`` always stays: whoever may read an item may know which one it is, and clients need
    it to address the item.
    """
    if readable is None:
        return item
    return {k: v for k, v in item.items() if k == "id" or k in readable}


def project(item: dict[str, Any], names: Iterable[str] | None) -> dict[str, Any]:
    """Only the keys ``names`` (``None``: all), ``id`` always included."""
    if names is None:
        return item
    wanted = set(names)
    return {k: v for k, v in item.items() if k == "id" or k in wanted}


def empty_record(defaults: Mapping[str, Any], status: str) -> dict[str, Any]:
    """A singleton that was never written: ``id`` null, structural keys empty, the defaults."""
    out: dict[str, Any] = {key: None for key in STRUCTURAL}
    out["status"] = status
    out.update(defaults)
    return out
