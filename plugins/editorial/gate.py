"""The editorial gate: a bus filter on item writes, so every path meets it.

REST's PATCH and PUT, a release's publish, GraphQL mutations, flows and MCP tools all write
through the items API, whose writes run the ``items.create`` and ``items.update`` filters in
their transaction. For an item of a collection with ``meta.editorialWorkflow``:

1. A write that makes the item ``published`` (its status was something else, or it is created
   published) needs the item's editorial state to be ``approved``, and must not change its
   content in the same write (what goes live is what was reviewed). Else 409
   ``EDITORIAL_GATE_REQUIRED`` (a release records it as the item's outcome reason).
2. While published, the item's content is frozen: a write that changes content and leaves it
   published is refused the same way. Unpublish (any other status), edit, review, publish.
3. A content change of an item that is ``in_review``, ``approved`` or ``rejected`` returns it
   to ``draft`` (its open or decided review becomes ``superseded``; audited).

Writes that ``onDelete`` makes on its own (set-null of a deleted related item) are not refused:
referential integrity comes before review. Status and sort changes are not content changes.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.editorial import workflow
from plugins.schema.api import get_schema

PUBLISHED = "published"
NOT_CONTENT = frozenset({"id", "status", "sort", "createdAt", "updatedAt", "userCreated", "userUpdated"})


def gate_refused(collection: str, item_id: Any, why: str) -> ApiError:
    return ApiError(409, "EDITORIAL_GATE_REQUIRED", f"'{collection}/{item_id}' {why}",
                    extensions={"collection": collection, "itemId": str(item_id)})


def content_changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    return any(before.get(k) != after.get(k) for k in {*before, *after} - NOT_CONTENT)


async def editorial_gate(event: str, payload: Any, ctx: Any) -> None:
    """The filter of ``items.create`` and ``items.update`` (see the module's rules)."""
    if not isinstance(payload, dict) or ctx.conn is None or ctx.site_id is None:
        return
    collection, after = payload.get("collection"), payload.get("after")
    if not isinstance(collection, str) or not isinstance(after, dict):
        return
    coll = (await get_schema(ctx.kernel, ctx.site_id)).collection(collection)
    if coll is None or not coll.editorial_workflow:
        return
    before = payload.get("before") if isinstance(payload.get("before"), dict) else None
    item_id = str(payload.get("id") or after.get("id"))
    db = SiteDB(ctx.site_id, ctx.conn)
    row = await workflow.current(db, collection, item_id)
    state = row["state"] if row is not None else "draft"
    was_published = before is not None and before.get("status") == PUBLISHED
    changed = content_changed(before or {}, after)
    system_write = isinstance(payload.get("cause"), dict)  # onDelete's own set-null
    if after.get("status") == PUBLISHED and not system_write:
        if not was_published and state != "approved":
            raise gate_refused(collection, item_id, f"is {state.replace('_', ' ')}: only an approved item "
                               "can be published (submit it for review)")
        if not was_published and changed and before is not None:
            raise gate_refused(collection, item_id, "was approved with other content: publish it without "
                               "changing it, or submit the change for review")
        if was_published and changed:
            raise gate_refused(collection, item_id, "is published: unpublish it to edit it, then review "
                               "and publish again")
    if changed and before is not None and state != "draft":
        await workflow.back_to_draft(db, ctx.principal, collection, item_id, row, ctx.request_id)
