"""The item a history route addresses, checked once: permission, collection, visibility.

Revisions, versions and pins all hang off one item, and each of their routes starts the same
way: the caller needs ``read`` (to look) or ``update`` (to change) on the collection, and the
item must be live and inside that permission's row filter, else 404 ``RECORD_NOT_FOUND``, the
answer the item itself gives. Everything below runs on the site-scoped ``db`` handed in, so a
route reads the item and its history in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernel.base.errors import ApiError
from kernel.policy.access import Decision
from plugins.items.core.context import dialect_of, schema_and_collection
from plugins.items.core.grants import fields_by_row
from plugins.items.core.guard import decide, readable, require
from plugins.items.core.records import STRUCTURAL, item_record, mask
from plugins.items.core.rows import fetch_row
from plugins.items.core.validation import check_bodies
from plugins.items.errors import record_not_found, validation_errors
from plugins.schema.api import nested_fields

MAX_NAME = 200


@dataclass
class ItemTarget:
    """A live, visible item: its collection, its row, the decision checked and the read one."""

    snap: Any
    coll: Any
    row: Any
    decision: Decision
    read: Decision
    granted: frozenset[str] | None = None

    @property
    def item(self) -> dict[str, Any]:
        """The whole item, unmasked (server use: snapshots, comparisons)."""
        return item_record(self.row)

    @property
    def readable(self) -> frozenset[str] | None:
        """The fields the caller may read on this item (``None``: all): where the read rules
        grant different fields on different rows, those granted on this one."""
        return self.granted if self.read.allowed and self.read.paired else readable(self.read)

    def content(self) -> dict[str, Any]:
        """The item's content fields (no structural keys), unmasked."""
        return dict(self.row["data"] or {})

    def masked(self, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` without what the caller may not read (no ``id`` kept: not an item)."""
        allowed = self.readable
        if allowed is None:
            return dict(values)
        return {k: v for k, v in values.items() if k in allowed}


async def load_target(ctx: Any, db: Any, collection: str, item_id: str, action: str) -> ItemTarget:
    """Check ``action`` (403 first, so nobody probes collections), then find the item (404)."""
    decision = await require(ctx, collection, action)
    read = decision if action == "read" else await decide(ctx, collection, "read")
    snap, coll = await schema_and_collection(ctx, collection)
    row = await fetch_row(db, coll, item_id, decision, dialect_of(ctx), snap)  # snap: relational conditions
    if row is None:
        raise record_not_found(collection, str(item_id))
    granted = None
    if read.allowed and read.paired:
        found = await fields_by_row(db, coll, read, [row["id"]], dialect=dialect_of(ctx), snapshot=snap)
        granted = found.get(row["id"], frozenset())
    return ItemTarget(snap, coll, row, decision, read, granted)


def mask_item(target: ItemTarget, item: dict[str, Any]) -> dict[str, Any]:
    """An item-shaped snapshot as the caller may read it (``id`` always stays)."""
    return mask(item, target.readable)


def content_body(target: ItemTarget, data: Any, path: Sequence[str | int]) -> dict[str, Any]:
    """``data`` checked as a partial item of the target's collection: content fields only
    (400 for ``id``/``status``/``sort``: history holds content), the caller's write policy
    (403 ``field_policy``), every value through the field's validation; returns it normalised."""
    if not isinstance(data, dict):
        raise ApiError.validation("'data' must be a JSON object", path=list(path))
    problems = [([*path, key], f"'{key}' is not a content field; history holds content fields only")
                for key in data if key in STRUCTURAL]
    if problems:
        raise validation_errors(problems)
    [draft] = check_bodies(target.coll, [data], [list(path)], mode="update", writable=target.decision.fields,
                           action="write", nested=nested_fields(target.snap, target.coll.name),
                           current_id=target.row["id"], read=target.read)
    return draft.data


def name_field(body: dict[str, Any], default: str | None = None) -> str | None:
    """An optional ``name``: a string of 1 to ``MAX_NAME`` characters."""
    if "name" not in body or body["name"] is None:
        return default
    value = body["name"]
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
        raise ApiError.validation(f"'name' must be a string of 1 to {MAX_NAME} characters", path=["name"])
    return value


def actor_of(principal: Any) -> dict[str, Any]:
    """Who did it, as history records it: the identity, its key, and an impersonating admin."""
    return {
        "kind": getattr(principal, "kind", None),
        "userId": getattr(principal, "user_id", None),
        "apiKeyId": getattr(principal, "api_key_id", None),
        "impersonatorId": getattr(principal, "impersonator_id", None),
    }


def reject_unknown_keys(body: dict[str, Any], allowed: frozenset[str]) -> None:
    """400 for keys a route does not take (no silent mass assignment)."""
    problems = [([str(key)[:80]], f"Unknown field '{str(key)[:80]}'") for key in body if key not in allowed]
    if problems:
        raise validation_errors(problems)
