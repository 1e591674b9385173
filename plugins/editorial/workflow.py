"""The editorial state of items and its changes, shared by the routes and the gate.

States: ``draft`` (no row), ``in_review``, ``approved``, ``rejected``. Review requests carry
their own ``state``: ``in_review``, ``approved``, ``rejected``, or ``superseded`` when the item
was edited while the request was open or after it was decided.
"""

from __future__ import annotations

from typing import Any

from kernel.db.meta import now_utc
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.editorial.tables import reviews, states

STATES = ("draft", "in_review", "approved", "rejected")
REVIEW_STATES = ("in_review", "approved", "rejected", "superseded")
AUDIT_ACTION = "editorial_transition"


async def current(db: SiteDB, collection: str, item_id: str) -> Any:
    """The state row of the item, or None (``draft``)."""
    return await db.one(db.select(states).where(states.c.collection == collection, states.c.item_id == item_id))


async def set_state(db: SiteDB, collection: str, item_id: str, state: str, review_id: str | None,
                    existing: Any) -> None:
    now = now_utc()
    if existing is None:
        await db.insert(states, {"site_id": db.site_id, "collection": collection, "item_id": item_id,
                                 "state": state, "review_id": review_id, "updated_at": now})
    else:
        await db.execute(db.update(states).where(states.c.collection == collection, states.c.item_id == item_id)
                         .values(state=state, review_id=review_id, updated_at=now))


async def record_transition(conn: Any, site_id: str, principal: Any, collection: str, item_id: str,
                            before: str, after: str, review_id: str | None, *, request_id: str | None = None,
                            why: str | None = None, extra: dict[str, Any] | None = None) -> None:
    """The audit record ``editorial_transition`` (identifiers only); ``extra``: more details
    (an approval's ``publish`` mode and whether it ``published`` the item)."""
    details: dict[str, Any] = {"collection": collection, "itemId": item_id, "from": before, "to": after,
                               "reviewId": review_id, **(extra or {})}
    if why:
        details["trigger"] = why
    await audit.record(conn, action=AUDIT_ACTION, site_id=site_id, principal=principal, target_type="item",
                       target_id=f"{collection}/{item_id}", details=details, request_id=request_id)


async def signal(kernel: Any, site_id: str, collection: str, item_id: str) -> None:
    """After a transition commits: the live signal ``editorial.<collection>`` ``{ collection,
    action: "review", itemId }`` (identifiers only), which the realtime channel sends to the
    item's readers as an event frame, so an open review panel or a list's badges follow at once.
    Lossy like every topic; an edit's return to draft needs none (the item's own update is one)."""
    await kernel.topics.publish(site_id, f"editorial.{collection}",
                                {"collection": collection, "action": "review", "itemId": item_id})


async def back_to_draft(db: SiteDB, principal: Any, collection: str, item_id: str, row: Any,
                        request_id: str | None) -> None:
    """An edit of an item under review or decided: the review no longer describes its content."""
    if row is None or row["state"] == "draft":
        return
    if row["review_id"] and row["state"] in ("in_review", "approved"):
        await db.execute(db.update(reviews).where(reviews.c.id == row["review_id"]).values(
            state="superseded", decided_at=now_utc()))
    await set_state(db, collection, item_id, "draft", row["review_id"], row)
    await record_transition(db.conn, db.site_id, principal, collection, item_id, row["state"], "draft",
                            row["review_id"], request_id=request_id, why="edited")
