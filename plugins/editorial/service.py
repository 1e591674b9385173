"""Editorial transitions and the review list: the logic behind ``/editorial`` (no Falcon).

- ``submit-review`` ``{ reviewerId }``: ``draft`` -> ``in_review``. The caller may update the
  item; the reviewer is an active member of the site who may update the collection (who may
  approve), and with ``requireSeparateReviewer`` is neither the submitter nor the item's author
  (``userCreated``). With the realtime plugin, the reviewer alone is notified.
- ``approve``: ``in_review`` -> ``approved``, by the assigned reviewer (or a site admin); with
  ``requireSeparateReviewer`` the approver differs from the submitter and the author. Then it
  proceeds to publish per the collection's ``editorialPublish``: ``release`` (the default) leaves
  the item approved for a release (or a write) to publish; ``approval`` publishes it in the same
  transaction, through the items API as the approver (so the gate, validation, permissions and
  hooks apply; a refusal there refuses the approval, and nothing changes).
- ``reject`` ``{ reason }``: ``in_review`` -> ``rejected``, by the same people.
- Any other transition is 409 ``CONFLICT``. Each one is audited as ``editorial_transition``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from plugins.access import api as access_api
from plugins.accounts import api as accounts_api
from plugins.editorial import workflow
from plugins.editorial.gate import PUBLISHED
from plugins.editorial.tables import reviews
from plugins.items import api as items
from plugins.schema.api import get_schema

MAX_REASON = 2000
USER_ID_MAX = 36


async def require_member(ctx: Any) -> str:
    """The request's site, for a studio member of it (401 anonymous, 403 frontend realm or no role)."""
    return await access_api.require_studio(ctx, "The editorial workflow")


def review_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "collection": row["collection"], "itemId": row["item_id"], "state": row["state"],
            "reviewerId": row["reviewer_id"], "submittedBy": row["submitted_by"], "authorId": row["author_id"],
            "reason": row["reason"], "createdAt": iso(row["created_at"]), "decidedAt": iso(row["decided_at"]),
            "decidedBy": row["decided_by"]}


async def workflow_collection(ctx: Any, collection: str) -> Any:
    """The collection's schema, 404 ``NOT_FOUND`` when missing, 409 ``CONFLICT`` without the workflow."""
    coll = (await get_schema(ctx.kernel, ctx.site_id)).collection(collection) if isinstance(collection, str) else None
    if coll is None:
        raise ApiError(404, "NOT_FOUND", f"No collection '{str(collection)[:64]}' in this site")
    if not coll.editorial_workflow:
        raise ApiError(409, "CONFLICT", f"'{collection}' has no editorial workflow (collection meta "
                       "editorialWorkflow)")
    return coll


async def may_update(ctx: Any, principal: Any, collection: str) -> bool:
    return principal.is_admin or (await ctx.kernel.access.decide(principal, ctx.site_id, collection, "update")).allowed


async def may_review(ctx: Any, reviewer: Any, collection: str) -> bool:
    """Whether ``reviewer`` (resolved in the site) may be assigned a review: a member (admin
    access or a role) who may update the collection (who may approve)."""
    return bool(reviewer.is_admin or reviewer.role_id) and await may_update(ctx, reviewer, collection)


def decision_refusal(principal: Any, coll: Any, review: Any, author: str | None, verdict: str) -> ApiError | None:
    """Why ``principal`` may not give ``verdict`` on the open ``review`` (403), or None: only the
    assigned reviewer or a site admin decides; with ``requireSeparateReviewer`` the approver is
    neither the submitter nor the author."""
    action = "approve" if verdict == "approved" else "reject"
    me = principal.user_id
    if me != review["reviewer_id"] and not principal.is_admin:
        return ApiError.forbidden(f"Only the assigned reviewer (or a site admin) may {action} this item")
    if verdict == "approved" and coll.require_separate_reviewer and \
            me in (review["submitted_by"], review["author_id"], author):
        return ApiError.forbidden("This collection requires a reviewer other than the author")
    return None


def _conflict(state: str, action: str) -> ApiError:
    return ApiError(409, "CONFLICT", f"Cannot {action} an item that is {state.replace('_', ' ')}",
                    extensions={"state": state})


async def submit(ctx: Any, collection: str, item_id: str, body: Any) -> dict[str, Any]:
    """``POST /editorial/:collection/:id/submit-review``."""
    site_id = await require_member(ctx)
    coll = await workflow_collection(ctx, collection)
    if not isinstance(body, dict) or set(body) - {"reviewerId"}:
        raise ApiError.validation("The body is { reviewerId }", path=["body"])
    reviewer_id = body.get("reviewerId")
    if not isinstance(reviewer_id, str) or not 1 <= len(reviewer_id) <= USER_ID_MAX:
        raise ApiError.validation("'reviewerId' is the id of a user who may approve", path=["reviewerId"])
    item = await items.read(ctx, collection, item_id)  # 404 when missing or hidden
    if not await may_update(ctx, ctx.principal, collection):
        raise ApiError.forbidden(f"Submitting needs update permission on '{collection}'")
    reviewer = await accounts_api.principal_current(ctx.kernel, site_id, {"kind": "user", "userId": reviewer_id})
    if reviewer is not None:
        reviewer = await ctx.kernel.access.resolve(reviewer, site_id)
    if reviewer is None or not await may_review(ctx, reviewer, collection):
        raise ApiError.validation("The reviewer must be an active member of the site who may update "
                                  f"'{collection}'", path=["reviewerId"], status=422)
    author = await items.author_of(ctx, collection, item_id)  # unmasked: a hidden userCreated is no way out
    if coll.require_separate_reviewer and reviewer_id in (ctx.principal.user_id, author):
        raise ApiError.validation("This collection requires a reviewer other than the author", path=["reviewerId"],
                                  status=422)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await workflow.current(db, collection, str(item["id"]))
        state = row["state"] if row is not None else "draft"
        if state != "draft":
            raise _conflict(state, "submit for review")
        review_id = uuid7()
        await db.insert(reviews, {"id": review_id, "collection": collection, "item_id": str(item["id"]),
                                  "state": "in_review", "reviewer_id": reviewer_id,
                                  "submitted_by": ctx.principal.user_id, "author_id": author, "reason": None,
                                  "created_at": now_utc(), "decided_at": None, "decided_by": None})
        await workflow.set_state(db, collection, str(item["id"]), "in_review", review_id, row)
        await workflow.record_transition(uow.conn, site_id, ctx.principal, collection, str(item["id"]), state,
                                         "in_review", review_id, request_id=ctx.request_id)
        await tell_reviewer(ctx, uow, reviewer_id, collection, str(item["id"]), review_id)
        answer = review_record(await db.one(db.select(reviews).where(reviews.c.id == review_id)))
    await workflow.signal(ctx.kernel, site_id, collection, str(item["id"]))
    return answer


async def tell_reviewer(ctx: Any, uow: Any, reviewer_id: str, collection: str, item_id: str, review_id: str) -> None:
    """The assigned reviewer alone gets a notification (kind ``editorial.review_requested``),
    written in the submission's transaction through the bus filter ``realtime.notify``: editorial
    does not require the optional realtime plugin, and without it nobody answers."""
    await uow.filter("realtime.notify", {
        "recipients": [reviewer_id], "kind": "editorial.review_requested",
        "title": f"Review requested: '{collection}' item {item_id}"[:200],
        "deepLink": f"/editorial/{collection}/{item_id}"[:2000], "entityId": review_id})


async def decide(ctx: Any, collection: str, item_id: str, verdict: str, body: Any) -> dict[str, Any]:
    """``approve`` (``verdict="approved"``) or ``reject`` (``"rejected"``, body ``{ reason }``)."""
    site_id = await require_member(ctx)
    coll = await workflow_collection(ctx, collection)
    reason = None
    if verdict == "rejected":
        if not isinstance(body, dict) or set(body) - {"reason"}:
            raise ApiError.validation("The body is { reason }", path=["body"])
        reason = body.get("reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON or "\x00" in reason:
            raise ApiError.validation(f"'reason' is a non-empty string of at most {MAX_REASON} characters",
                                      path=["reason"])
    elif body not in (None, {}):
        raise ApiError.validation("approve takes no body", path=["body"])
    item = await items.read(ctx, collection, item_id)
    author = await items.author_of(ctx, collection, item_id)
    action = "approve" if verdict == "approved" else "reject"
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await workflow.current(db, collection, str(item["id"]))
        state = row["state"] if row is not None else "draft"
        if state != "in_review":
            raise _conflict(state, action)
        review = await db.one(db.select(reviews).where(reviews.c.id == row["review_id"]))
        refused = decision_refusal(ctx.principal, coll, review, author, verdict)
        if refused is not None:
            raise refused
        me = ctx.principal.user_id
        await db.execute(db.update(reviews).where(reviews.c.id == review["id"]).values(
            state=verdict, reason=reason, decided_at=now_utc(), decided_by=me))
        await workflow.set_state(db, collection, str(item["id"]), verdict, review["id"], row)
        extra = None
        if verdict == "approved":
            published = await publish_on_approval(ctx, coll, item, review["id"], uow)
            extra = {"publish": coll.editorial_publish, "published": published}
        await workflow.record_transition(uow.conn, site_id, ctx.principal, collection, str(item["id"]), state,
                                         verdict, review["id"], request_id=ctx.request_id, extra=extra)
        answer = review_record(await db.one(db.select(reviews).where(reviews.c.id == review["id"])))
    await workflow.signal(ctx.kernel, site_id, collection, str(item["id"]))
    return answer


async def publish_on_approval(ctx: Any, coll: Any, item: dict[str, Any], review_id: str, uow: Any) -> bool:
    """Publish the just-approved ``item`` when its collection says approval publishes
    (``editorialPublish: approval``); whether this wrote it. The write joins the approval's
    transaction, after the state became ``approved``, so the gate lets it through; it records the
    cause ``editorial:<reviewId>`` on the revision and the item event."""
    if coll.editorial_publish != "approval" or item.get("status") == PUBLISHED:
        return False
    await items.update(ctx, coll.name, str(item["id"]), {"status": PUBLISHED}, uow=uow,
                       cause=f"editorial:{review_id}")
    return True


async def list_reviews(ctx: Any, status: str | None, assignee: str | None, limit: int,
                       offset: int) -> tuple[list[dict[str, Any]], int]:
    """``GET /editorial/reviews``: newest first; ``status`` is a review state, ``assignee`` a user id.
    A member who is not an admin sees the reviews of the collections they may read, no others
    (their names, item ids and rejection reasons are not theirs to see)."""
    await require_member(ctx)
    if status is not None and status not in workflow.REVIEW_STATES:
        raise ApiError.validation(f"'status' is one of {', '.join(workflow.REVIEW_STATES)}", path=["query", "status"])
    if assignee is not None and not 1 <= len(assignee) <= USER_ID_MAX:
        raise ApiError.validation("'assignee' is a user id", path=["query", "assignee"])
    stmt_filter = None
    if not ctx.principal.is_admin:  # only the reviews of collections the caller may read
        schema = await get_schema(ctx.kernel, ctx.site_id)
        readable = [name for name in schema.collections
                    if (await ctx.kernel.access.decide(ctx.principal, ctx.site_id, name, "read")).allowed]
        stmt_filter = reviews.c.collection.in_(readable)
    async with ctx.reader() as db:
        stmt, count = db.select(reviews), db.select(reviews, func.count())
        if stmt_filter is not None:
            stmt, count = stmt.where(stmt_filter), count.where(stmt_filter)
        for column, value in ((reviews.c.state, status), (reviews.c.reviewer_id, assignee)):
            if value is not None:
                stmt, count = stmt.where(column == value), count.where(column == value)
        rows = await db.all(stmt.order_by(reviews.c.created_at.desc(), reviews.c.id.desc()).limit(limit)
                            .offset(offset))
        total = int(await db.scalar(count) or 0)
    return [review_record(r) for r in rows], total
