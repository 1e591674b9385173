"""Revisions: one row per change of an item, written in the change's own transaction.

``revision_row`` is written by the item write filter (``history_events``) for every update
(the first one records the created state before it: ``baseline_row``), so REST, GraphQL,
flows and releases all leave the same trail. A revision keeps who (identity, API key,
impersonating admin), when, the delta (``{ field: { from, to } }`` over content, ``status``
and ``sort``) and the whole item after the change.

A revision also keeps the cause of its write (``causedBy``: ``release:<id>``,
``flow-run:<id>``, the ``cause=`` of ``items.api``; null for plain REST writes), given as a
parameter and carried by the write's unit of work into the event payload (``causedBy``).

A *staged* revision (``POST .../revisions`` with ``staged`` true, the default) is prepared
content that does not touch the item; ``.../revisions/{id}/commit`` freezes it. Revert and
release pins refuse staged revisions (409 ``REVISION_STAGED``): only committed content may
become live. Revert and promote run through ``write.path.update_item`` (validation, field
policy, pins, events) with the cause ``revert:<revisionId>`` / ``promote:<version key>``,
which makes the revision they write one of kind ``revert``/``promote`` (``revision_kind``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from typing import Any

from sqlalchemy import func, or_, select

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from plugins.items.core.records import STRUCTURAL
from plugins.items.core.reveal import reveal
from plugins.items.history.target import (
    ItemTarget,
    actor_of,
    content_body,
    load_target,
    mask_item,
    reject_unknown_keys,
)
from plugins.items.tables import revisions
from plugins.items.write.path import update_item
from plugins.schema.api import get_schema

ERROR_CODES: dict[str, tuple[int, str]] = {
    "REVISION_STAGED": (409, "A staged (uncommitted) revision was pinned by a release or reverted to."),
}
# Structural keys whose changes a delta shows; the others are maintained by the server.
TRACKED_STRUCTURAL = frozenset({"status", "sort"})
# Revision ids are UUIDs; anything else cannot exist (and a NUL byte must never reach PostgreSQL).
REVISION_ID = re.compile(r"^[0-9A-Fa-f-]{1,36}$")


# Causes the items plugin writes itself (``core.context.OWN_CAUSES``): the revision's kind and the
# key of its ``origin``.
OWN_CAUSES = {"revert": "revisionId", "promote": "version"}


def revision_kind(payload: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The kind and ``origin`` of the revision an update event writes: ``revert``/``promote``
    from their cause, else ``update`` (with the ``onDelete`` cause of a set-null, if any)."""
    caused_by = payload.get("causedBy")
    kind, _, ref = caused_by.partition(":") if isinstance(caused_by, str) else ("", "", "")
    if kind in OWN_CAUSES:
        return kind, {OWN_CAUSES[kind]: ref}
    return "update", ({"cause": payload["cause"]} if payload.get("cause") else None)


async def written_revision(db: Any, coll: Any, item_id: str, caused_by: str) -> str | None:
    """The id of the latest revision of the item that ``caused_by`` wrote (on the write's ``db``)."""
    return await db.scalar(db.select(revisions, revisions.c.id).where(
        revisions.c.collection_id == coll.id, revisions.c.item_id == item_id, revisions.c.caused_by == caused_by)
        .order_by(revisions.c.created_at.desc(), revisions.c.id.desc()).limit(1))


def _tracked(key: str) -> bool:
    return key not in STRUCTURAL or key in TRACKED_STRUCTURAL


def delta_of(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """``{ field: { from, to } }`` for every tracked key whose value changed."""
    before = before or {}
    keys = dict.fromkeys([*after, *before])
    return {k: {"from": before.get(k), "to": after.get(k)} for k in keys
            if _tracked(k) and before.get(k) != after.get(k)}


def snapshot_of(coll: Any, item: dict[str, Any]) -> dict[str, Any]:
    """The item with every field of the schema present (null when unset): a revert can then
    tell "had no value" (restore null) from "did not exist yet" (leave alone)."""
    out = dict(item)
    for name in coll.fields:
        out.setdefault(name, None)
    return out


def revision_row(coll: Any, item_id: str, *, kind: str, before: dict[str, Any] | None, after: dict[str, Any],
                 principal: Any, staged: bool = False, origin: dict[str, Any] | None = None,
                 at: dt.datetime | None = None, actor: dict[str, Any] | None = None,
                 caused_by: str | None = None) -> dict[str, Any]:
    """One ``svc_item_revisions`` row (its id a fresh uuid7), for ``record_revisions``."""
    revision_id, now, actor = uuid7(), at or now_utc(), actor or actor_of(principal)
    return {
        "id": revision_id, "collection_id": coll.id, "item_id": item_id, "kind": kind, "staged": staged,
        "data": snapshot_of(coll, after), "delta": delta_of(before, after), "origin": origin,
        "caused_by": caused_by,
        "actor_kind": actor["kind"], "actor_id": actor["userId"], "api_key_id": actor["apiKeyId"],
        "impersonator_id": actor["impersonatorId"], "created_at": now,
        "committed_at": None if staged else now,
    }


async def record_revisions(db: Any, rows: list[dict[str, Any]]) -> None:
    """Insert revision rows on ``db`` (the write's transaction) in one statement: an item's
    first update writes its baseline and its revision together (one statement fewer inside
    the write lock)."""
    await db.insert(revisions, rows)


async def record_revision(db: Any, coll: Any, item_id: str, *, kind: str, before: dict[str, Any] | None,
                          after: dict[str, Any], principal: Any, staged: bool = False,
                          origin: dict[str, Any] | None = None, at: dt.datetime | None = None,
                          actor: dict[str, Any] | None = None, caused_by: str | None = None) -> str:
    """Insert one revision on ``db`` (the write's transaction); returns its id."""
    row = revision_row(coll, item_id, kind=kind, before=before, after=after, principal=principal, staged=staged,
                       origin=origin, at=at, actor=actor, caused_by=caused_by)
    await record_revisions(db, [row])
    return row["id"]


def baseline_row(coll: Any, item_id: str, item: dict[str, Any]) -> dict[str, Any]:
    """The ``create`` revision of an item never updated before, written by its first update.

    Creating writes no revision (a bulk import of a thousand items would write a thousand
    rows for nothing): until the first update the item itself is its only state. That update
    records the state it starts from first, dated and attributed as the item records its
    creation (``createdAt``, ``userCreated``: the creating key or impersonator is not kept).
    """
    created = dt.datetime.fromisoformat(item["createdAt"])
    creator = item.get("userCreated")
    return revision_row(coll, item_id, kind="create", before=None, after=item, principal=None, at=created,
                        actor={"kind": "user" if creator else None, "userId": creator, "apiKeyId": None,
                               "impersonatorId": None})


def first_update(item: dict[str, Any]) -> bool:
    """Whether ``item`` (an update's ``before``) was never updated: every update moves ``updatedAt``."""
    created = item.get("createdAt")
    return isinstance(created, str) and created == item.get("updatedAt")


def revision_record(row: Any, target: ItemTarget) -> dict[str, Any]:
    """A revision as the caller may read it: snapshot and delta masked by the read policy."""
    allowed = target.readable
    delta = row["delta"] or {}
    return {
        "id": row["id"], "collection": target.coll.name, "item": row["item_id"], "kind": row["kind"],
        "staged": bool(row["staged"]), "createdAt": iso(row["created_at"]),
        "committedAt": iso(row["committed_at"]),
        "actor": {"kind": row["actor_kind"], "userId": row["actor_id"], "apiKeyId": row["api_key_id"],
                  "impersonatorId": row["impersonator_id"]},
        "delta": delta if allowed is None else {k: v for k, v in delta.items() if k in allowed},
        "data": mask_item(target, dict(row["data"] or {})),
        "origin": row["origin"],
        "causedBy": row["caused_by"],
    }


def _of_item(db: Any, target: ItemTarget) -> Any:
    return db.select(revisions).where(revisions.c.collection_id == target.coll.id,
                                      revisions.c.item_id == target.row["id"])


async def _revision_row(db: Any, target: ItemTarget, revision_id: Any) -> Any:
    """The revision of this item, or 404 ``NOT_FOUND`` (another item's id is not found either)."""
    if isinstance(revision_id, str) and REVISION_ID.match(revision_id):
        row = await db.one(_of_item(db, target).where(revisions.c.id == revision_id))
        if row is not None:
            return row
    raise ApiError.not_found(f"No revision '{str(revision_id)[:64]}' of this item")


def staged_error(revision_id: str) -> ApiError:
    """409 ``REVISION_STAGED``: staged content cannot go live before it is committed."""
    return ApiError(409, "REVISION_STAGED", f"Revision '{revision_id}' is staged; commit it first",
                    extensions={"revisionId": revision_id})


async def list_revisions(ctx: Any, collection: str, item_id: str, *, limit: int, offset: int,
                         staged: bool | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """An item's revisions, newest first, one page; ``staged`` filters on the flag."""
    async with ctx.reader() as db:
        target = await load_target(ctx, db, collection, item_id, "read")
        stmt = _of_item(db, target)
        if staged is not None:
            stmt = stmt.where(revisions.c.staged.is_(staged))
        rows = await db.all(stmt.order_by(revisions.c.created_at.desc(), revisions.c.id.desc())
                            .limit(limit).offset(offset))
        total = await db.scalar(db.scope(select(func.count()).select_from(stmt.subquery())))
    page = [revision_record(r, target) for r in rows]
    await reveal_revisions(ctx, target, page)
    return page, {"total": int(total or 0), "limit": limit, "offset": offset}


async def reveal_revisions(ctx: Any, target: ItemTarget, records: list[dict[str, Any]]) -> None:
    """The ``items.read`` hook over the revisions' content and both sides of their deltas
    (``core/reveal.py``): each side is shown to the hook as an item of its own."""
    schema = await get_schema(ctx.kernel, ctx.site_id)
    if not records or not schema.sensitive_fields(target.coll.name):
        return
    parts: list[dict[str, Any]] = []
    for r in records:
        delta = r["delta"]
        sides = [{k: v.get(side) for k, v in delta.items() if isinstance(v, dict)} for side in ("from", "to")]
        parts += [r["data"], *sides]
    await reveal(ctx, schema, target.coll.name, parts, "revision", ids=[target.row["id"]] * len(parts))
    for n, r in enumerate(records):
        before, after = parts[3 * n + 1], parts[3 * n + 2]
        r["delta"] = {k: {"from": before.get(k), "to": after.get(k)} if isinstance(v, dict) else v
                      for k, v in r["delta"].items()}


async def get_revision(ctx: Any, collection: str, item_id: str, revision_id: str) -> dict[str, Any]:
    """One revision of the item (404 ``NOT_FOUND`` when it is not this item's)."""
    async with ctx.reader() as db:
        target = await load_target(ctx, db, collection, item_id, "read")
        record = revision_record(await _revision_row(db, target, revision_id), target)
    await reveal_revisions(ctx, target, [record])
    return record


async def stage_revision(ctx: Any, collection: str, item_id: str, body: Any) -> dict[str, Any]:
    """``POST .../revisions`` ``{ data, staged? }``: a prepared revision of main plus ``data``,
    checked like a PATCH; the item is not touched. ``staged: false`` commits it at once."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown_keys(body, frozenset({"data", "staged"}))
    staged = body.get("staged", True)
    if not isinstance(staged, bool):
        raise ApiError.validation("'staged' must be a boolean", path=["staged"])
    if "data" not in body:
        raise ApiError.validation("'data' is required", path=["data"])
    async with ctx.unit_of_work() as u:
        target = await load_target(ctx, u.db, collection, item_id, "update")
        data = content_body(target, body["data"], ["data"])
        before = target.item
        after = {**before, **data}
        revision_id = await record_revision(u.db, target.coll, target.row["id"], kind="prepared", before=before,
                                            after=after, principal=ctx.principal, staged=staged)
        row = await _revision_row(u.db, target, revision_id)
    return revision_record(row, target)


async def commit_revision(ctx: Any, collection: str, item_id: str, revision_id: str) -> dict[str, Any]:
    """Freeze a staged revision (409 ``CONFLICT`` when it is committed already)."""
    async with ctx.unit_of_work() as u:
        target = await load_target(ctx, u.db, collection, item_id, "update")
        row = await _revision_row(u.db, target, revision_id)
        if not row["staged"]:
            raise ApiError(409, "CONFLICT", f"Revision '{row['id']}' is committed already",
                           extensions={"revisionId": row["id"]})
        db = u.db
        result = await db.execute(db.update(revisions).where(
            revisions.c.id == row["id"], revisions.c.staged.is_(True)).values(staged=False, committed_at=now_utc()))
        if result.rowcount != 1:  # a concurrent commit won
            raise ApiError(409, "CONFLICT", f"Revision '{row['id']}' is committed already")
        row = await _revision_row(db, target, revision_id)
    return revision_record(row, target)


def restore_body(coll: Any, snapshot: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """A PATCH body that makes the item's content equal the snapshot's: only the fields that
    differ (so the field policy applies to what really changes), only fields of today's schema
    the snapshot knew. ``status`` and ``sort`` stay: publication is the workflow's business."""
    return {name: snapshot[name] for name in coll.fields
            if name in snapshot and snapshot[name] != current.get(name)}


async def revert_item(ctx: Any, collection: str, item_id: str, body: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``POST .../revert`` ``{ revisionId }``: the revision's content applied through the update
    path, in one transaction; returns the item and ``{ revisionId }`` of the revert's revision."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown_keys(body, frozenset({"revisionId"}))
    revision_id = body.get("revisionId")
    if not isinstance(revision_id, str) or not revision_id:
        raise ApiError.validation("'revisionId' must be a revision id", path=["revisionId"])
    async with ctx.unit_of_work() as u:
        target = await load_target(ctx, u.db, collection, item_id, "update")
        row = await _revision_row(u.db, target, revision_id)
        if row["staged"]:
            raise staged_error(row["id"])
        patch = restore_body(target.coll, dict(row["data"] or {}), target.item)
        cause = f"revert:{row['id']}"
        item = await update_item(ctx, collection, item_id, patch, uow=u, cause=cause)
        written = await written_revision(u.db, target.coll, target.row["id"], cause)
    return item, {"revisionId": written}


async def pinnable_revision(ctx: Any, collection: str, item_id: str, revision_id: str, *,
                            db: Any = None) -> dict[str, Any]:
    """For releases: the committed revision ``revision_id`` of the item, unmasked (server use),
    after the caller's ``update`` check; 404 ``NOT_FOUND`` when it is not this item's, 409
    ``REVISION_STAGED`` when it is staged. ``db``: the caller's transaction, if any."""
    async with contextlib.AsyncExitStack() as stack:
        if db is None:
            db = await stack.enter_async_context(ctx.reader())
        target = await load_target(ctx, db, collection, item_id, "update")
        row = await _revision_row(db, target, revision_id)
    if row["staged"]:
        raise staged_error(row["id"])
    return {"id": row["id"], "data": dict(row["data"] or {}), "createdAt": iso(row["created_at"]),
            "restore": restore_body(target.coll, dict(row["data"] or {}), target.item)}


async def revision_before(ctx: Any, collection: str, item_id: str, cause: str, *, db: Any) -> dict[str, Any] | None:
    """For releases: the latest committed revision of the item that ``cause`` did not write, read
    on the write's ``db`` right after that cause's writes (so: the state the item had before
    them), as ``{ id, status }``; None when the item has no revision (nothing was written)."""
    target = await load_target(ctx, db, collection, item_id, "update")
    row = await db.one(_of_item(db, target).where(
        revisions.c.staged.is_(False), or_(revisions.c.caused_by.is_(None), revisions.c.caused_by != cause))
        .order_by(revisions.c.created_at.desc(), revisions.c.id.desc()).limit(1))
    if row is None:
        return None
    return {"id": row["id"], "status": (row["data"] or {}).get("status")}


__all__ = ["ERROR_CODES", "OWN_CAUSES", "commit_revision", "delta_of", "first_update", "baseline_row",
           "get_revision", "list_revisions", "pinnable_revision", "record_revision", "record_revisions", "restore_body",
           "revert_item", "revision_before", "revision_kind", "stage_revision", "written_revision"]
