"""What a client needs to show the workflow (the studio's review panel and list badges), read
with the same rules the transitions apply (``service.py``), so a button is shown exactly when
its transition would pass:

- ``GET /editorial/{collection}/{id}``: the item's state, its latest review, and the
  ``transitions`` the caller may take now (``submit-review``, ``approve``, ``reject``);
- ``GET /editorial/states?collection=&ids=a,b``: the states of up to 100 items the caller can
  see (ids it cannot see are left out, so they cannot be probed);
- ``GET /editorial/reviewers?collection=&item=``: the members a submitter may name as the
  reviewer (with ``item`` and ``requireSeparateReviewer``: neither the caller nor the author).
"""

from __future__ import annotations

from typing import Any

from kernel.auth.principal import Principal
from kernel.base.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.accounts.api import active_members
from plugins.editorial import service, workflow
from plugins.editorial.tables import reviews, states
from plugins.items import api as items

MAX_IDS = 100
ID_MAX = 64
# Members read to find the reviewers; a site with more lists the first ones by email.
MAX_MEMBERS = 500


async def item_state(ctx: Any, collection: str, item_id: str) -> dict[str, Any]:
    """``{ collection, itemId, state, review, transitions }`` of an item the caller can see."""
    await service.require_member(ctx)
    coll = await service.workflow_collection(ctx, collection)
    item = await items.read(ctx, collection, item_id)  # 404 when missing or hidden
    author = await items.author_of(ctx, collection, item_id)
    key = str(item["id"])
    async with ctx.reader() as db:
        row = await workflow.current(db, collection, key)
        review = None
        if row is not None and row["review_id"]:
            review = await db.one(db.select(reviews).where(reviews.c.id == row["review_id"]))
    state = row["state"] if row is not None else "draft"
    transitions = []
    if state == "draft" and await service.may_update(ctx, ctx.principal, collection):
        transitions.append("submit-review")
    if state == "in_review" and review is not None:
        transitions += [
            name
            for name, verdict in (("approve", "approved"), ("reject", "rejected"))
            if service.decision_refusal(ctx.principal, coll, review, author, verdict) is None
        ]
    return {
        "collection": collection,
        "itemId": key,
        "state": state,
        "review": service.review_record(review) if review is not None else None,
        "transitions": transitions,
    }


def _ids(raw: str | None) -> list[str]:
    ids = list(dict.fromkeys(part.strip() for part in (raw or "").split(",") if part.strip()))
    if not 1 <= len(ids) <= MAX_IDS or any(len(i) > ID_MAX or "\x00" in i for i in ids):
        raise ApiError.validation(
            f"'ids' is a comma-separated list of 1 to {MAX_IDS} item ids", path=["query", "ids"]
        )
    return ids


def _collection_param(raw: str | None) -> str:
    if not raw:
        raise ApiError.validation("'collection' is required", path=["query", "collection"])
    return raw


async def states_of(ctx: Any, collection: str | None, raw_ids: str | None) -> list[dict[str, Any]]:
    """``[{ itemId, state }]`` for the asked ids the caller can see, in the order asked."""
    await service.require_member(ctx)
    name = _collection_param(collection)
    await service.workflow_collection(ctx, name)
    ids = _ids(raw_ids)
    # The items the caller may read (row permissions included): the others are left out.
    page = await items.list_items(
        ctx, name, items.query(filter={"id": {"_in": ids}}, fields=["id"], limit=len(ids), meta="none")
    )
    seen = {str(i["id"]) for i in page.items}
    visible = [i for i in ids if i in seen]
    async with ctx.reader() as db:
        rows = await db.all(
            db.select(states).where(states.c.collection == name, states.c.item_id.in_(visible))
        )
    by_item = {r["item_id"]: r["state"] for r in rows}
    return [{"itemId": i, "state": by_item.get(i, "draft")} for i in visible]


async def reviewers(ctx: Any, collection: str | None, item_id: str | None) -> list[dict[str, Any]]:
    """``[{ id, email, firstName, lastName }]``: the active members who may review the
    collection's items, for a caller who may submit them (403 otherwise)."""
    site_id = await service.require_member(ctx)
    name = _collection_param(collection)
    coll = await service.workflow_collection(ctx, name)
    if not await service.may_update(ctx, ctx.principal, name):
        raise ApiError.forbidden(f"Listing reviewers needs update permission on '{name}'")
    excluded: set[str | None] = set()
    if item_id is not None:
        await items.read(ctx, name, item_id)  # 404 when missing or hidden
        if coll.require_separate_reviewer:
            excluded = {ctx.principal.user_id, await items.author_of(ctx, name, item_id)}
    async with ctx.kernel.db.connect() as conn:
        rows = await active_members(SiteDB(site_id, conn), MAX_MEMBERS)
    out = []
    for r in rows:
        if r["id"] in excluded:
            continue
        member = await ctx.kernel.access.resolve(
            Principal(
                kind="user",
                user_id=r["id"],
                site_id=site_id,
                is_instance_admin=r["isInstanceAdmin"],
                email=r["email"],
            ),
            site_id,
        )
        if await service.may_review(ctx, member, name):
            out.append(
                {"id": r["id"], "email": r["email"], "firstName": r["firstName"], "lastName": r["lastName"]}
            )
    return out
