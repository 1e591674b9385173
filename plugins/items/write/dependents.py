"""``GET .../dependents`` and ``POST .../resolve-dependents``: who references an item, and fixing it.

The descriptor lists every relation with live items referencing this one (``count`` and up
to five ``sample`` ids the caller may read); ``blocking`` says whether a delete would be
refused now (restrict references, also those reached through cascades).

Resolving acts on one relation's referencing items in one transaction: ``set_null`` clears
the reference (409 ``FIELD_REQUIRED`` for a required single-id field), ``reassign`` points it
at ``newTargetId`` (422 ``INVALID_TARGET`` unless that is another live item the caller can
read, valid for the holder field), ``delete`` deletes them with their own ``onDelete`` rules
(``hard: true``, admins only, removes the rows). The caller needs update (or delete)
permission on every referencing item and write permission on the holder field.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from plugins.items.core.context import dialect_of, reading, schema_and_collection, transaction
from plugins.items.core.grants import WriteGuard
from plugins.items.core.guard import decide, require
from plugins.items.core.rowfilter import apply_row_filter
from plugins.items.core.rows import fetch_row
from plugins.items.core.validation import is_item_id
from plugins.items.errors import dependents_exist, field_denied, record_not_found
from plugins.items.tables import items
from plugins.items.write import ondelete, refs, writes
from plugins.items.write.path import blocker_entries

ACTIONS = ("set_null", "delete", "reassign")
BODY_KEYS = frozenset({"action", "relation", "newTargetId", "hard"})


async def _referencing(db: Any, dialect: str, ref: Any, holder: Any, fdef: Any, coll: Any, item_id: str) -> list[Any]:
    rows = await refs.referencing_rows(db, dialect, holder, fdef, ref.shape, coll.name, item_id)
    # An item that references itself is not its own dependent: it goes with the delete.
    return [r for r in rows if not (holder.name == coll.name and r["id"] == item_id)]


async def descriptor(ctx: Any, db: Any, snap: Any, coll: Any, row: Any) -> dict[str, Any]:
    """``{ blocking, dependents }`` for one item, read on ``db`` (inside a write, it sees it)."""
    dialect = dialect_of(ctx)
    entries = []
    for ref, holder, fdef in ondelete.holders(snap, coll.name):
        found = await _referencing(db, dialect, ref, holder, fdef, coll, row["id"])
        if found:
            dep = ondelete.Dependents(ref.relation.id, holder.name, fdef.name, ref.on_delete, [r["id"] for r in found])
            read = await decide(ctx, holder.name, "read")
            entries.append(dep.entry(await ondelete.visible_sample(db, dep.ids, holder, read, dialect, snap)))
    plan = await ondelete.plan_delete(db, dialect, snap, coll, [row])
    return {"blocking": bool(plan.blockers), "dependents": entries}


async def describe_dependents(ctx: Any, collection: str, item_id: str, *, uow: Any = None) -> dict[str, Any]:
    """The dependents descriptor of a visible item (404 ``RECORD_NOT_FOUND`` otherwise)."""
    read = await require(ctx, collection, "read")
    snap, coll = await schema_and_collection(ctx, collection)
    async with reading(ctx, uow) as db:
        row = await fetch_row(db, coll, item_id, read, dialect_of(ctx), snap)
        if row is None:
            raise record_not_found(collection, str(item_id))
        return await descriptor(ctx, db, snap, coll, row)


def _parse(body: Any) -> tuple[str, str, Any, bool]:
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    for key in body:
        if key not in BODY_KEYS:
            raise ApiError.validation(f"Unknown field '{str(key)[:80]}'", path=[str(key)[:80]])
    action, relation, hard = body.get("action"), body.get("relation"), body.get("hard", False)
    if action not in ACTIONS:
        raise ApiError.validation(f"'action' must be one of {', '.join(ACTIONS)}", path=["action"])
    if not isinstance(relation, str) or not relation or len(relation) > 64:
        raise ApiError.validation("'relation' must be a relation id", path=["relation"])
    if not isinstance(hard, bool):
        raise ApiError.validation("'hard' must be true or false", path=["hard"])
    target = body.get("newTargetId")
    if action == "reassign" and target is None:
        raise ApiError.validation("'newTargetId' is required to reassign", path=["newTargetId"])
    if target is not None and (not isinstance(target, (str, int)) or isinstance(target, bool)):
        raise ApiError.validation("'newTargetId' must be an item id", path=["newTargetId"])
    return action, relation, None if target is None else str(target), hard


async def _check_rows_permitted(db: Any, holder: Any, rows: list[Any], decision: Any, dialect: str,
                                snap: Any = None) -> None:
    """403 unless the caller's row filter for the action covers every referencing item."""
    if not decision.row_filter or not rows:
        return
    ids = [r["id"] for r in rows]
    stmt = db.select(items, items.c.id).where(items.c.collection_id == holder.id, items.c.id.in_(ids))
    permitted = await db.all(apply_row_filter(stmt, decision, dialect=dialect, table=items, coll=holder,
                                                snapshot=snap))
    if len(permitted) != len(ids):
        raise ApiError.forbidden(f"Some referencing items of '{holder.name}' are outside your permissions",
                                 reason="row_policy")


async def _target_ok(ctx: Any, db: Any, coll: Any, fdef: Any, item_id: str, target: str, snap: Any = None) -> Any:
    """The holder value for ``target`` if it is a valid reassignment, else 422 ``INVALID_TARGET``."""
    invalid = ApiError(422, "INVALID_TARGET", f"'{target[:64]}' is not an item of '{coll.name}' you can assign",
                       path=["newTargetId"])
    if target == item_id or not is_item_id(target):
        raise invalid
    read = await require(ctx, coll.name, "read")
    if await fetch_row(db, coll, target, read, dialect_of(ctx), snap) is None:
        raise invalid
    value: Any = int(target) if fdef.type in ("integer", "bigInteger") and target.lstrip("-").isdigit() else target
    try:
        return fdef.validate(value) if fdef.type not in ("json", "csv") else value
    except ValueError as exc:
        raise invalid from exc


async def resolve_dependents(ctx: Any, collection: str, item_id: str, body: Any, *, uow: Any = None,
                             cause: str | None = None) -> dict[str, Any]:
    """Resolve one relation's dependents of an item; answers the new descriptor and what changed."""
    read = await require(ctx, collection, "read")
    snap, coll = await schema_and_collection(ctx, collection)
    action, relation, target, hard = _parse(body)
    dialect = dialect_of(ctx)
    async with transaction(ctx, uow, cause) as u:
        row = await fetch_row(u.db, coll, item_id, read, dialect, snap)
        if row is None:
            raise ApiError.not_found(f"No item '{str(item_id)[:64]}' in '{collection}'")
        found = next(((r, h, f) for r, h, f in ondelete.holders(snap, coll.name) if r.relation.id == relation), None)
        if found is None:
            raise ApiError.not_found(f"No relation '{relation}' points at '{collection}'")
        ref, holder, fdef = found
        rows = await _referencing(u.db, dialect, ref, holder, fdef, coll, row["id"])
        if action == "delete":
            if hard and not ctx.principal.is_admin:
                raise ApiError.forbidden("A hard delete needs admin access", reason="admin_only")
            decision = await require(ctx, holder.name, "delete")
            await _check_rows_permitted(u.db, holder, rows, decision, dialect, snap)
            plan = await ondelete.plan_delete(u.db, dialect, snap, holder, rows)
            if plan.blockers:
                raise dependents_exist(await blocker_entries(ctx, u.db, snap, plan))
            await ondelete.apply_plan(u, plan, hard=hard)
        else:
            decision = await require(ctx, holder.name, "update")
            if decision.fields is not None and fdef.name not in decision.fields:
                raise field_denied(fdef.name, ["relation"], "write")
            await _check_rows_permitted(u.db, holder, rows, decision, dialect, snap)
            if action == "set_null" and ref.shape == "id" and fdef.required:
                raise ApiError(409, "FIELD_REQUIRED", f"'{holder.name}.{fdef.name}' is required and cannot be "
                               "set to null", path=["action"], extensions={"field": fdef.name})
            new_value = await _target_ok(ctx, u.db, coll, fdef, row["id"], target, snap) if action == "reassign" else None
            cause = {"collection": coll.name, "id": row["id"], "relation": relation}
            guard = WriteGuard(decision, snap, dialect)  # each item must satisfy the update rule after too
            for dependent in rows:
                data = dict(dependent["data"] or {})
                current = data.get(fdef.name)
                data[fdef.name] = (refs.without(current, ref.shape, coll.name, row["id"]) if action == "set_null"
                                   else refs.replaced(current, ref.shape, coll.name, row["id"], new_value))
                await writes.update_row(u, holder, dependent, data, guard=guard, keys=frozenset({fdef.name}),
                                        cause=cause)
        after = await descriptor(ctx, u.db, snap, coll, row)
    return {"action": action, "relation": relation, "affected": len(rows), **after}
