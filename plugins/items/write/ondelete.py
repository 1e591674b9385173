"""``onDelete`` in the application layer, inside the delete's transaction.

``plan_delete`` first closes the set of items to delete over ``cascade`` references
(breadth-first, each item once, so cycles end), then looks at every ``restrict`` and
``set null`` reference into that set from items *outside* it: restrict ones block the whole
delete, set-null ones are cleared. ``apply_plan`` clears, then deletes, each write with its
own events (``cause`` names the item whose deletion caused it).

Side effects of ``onDelete`` are the schema's rules, so they apply whatever the caller may
do in the referencing collections; only the samples shown to the caller are masked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.tables import items
from plugins.items.write import refs, writes
from plugins.schema.api import relations_pointing_to

MAX_CASCADE = 10_000
SAMPLE = 5


@dataclass
class Dependents:
    """One relation's references into the items being deleted (``ids`` all of them)."""

    relation: str
    collection: str
    field: str
    on_delete: str
    ids: list[str] = field(default_factory=list)

    def entry(self, sample: list[str]) -> dict[str, Any]:
        """The API shape ``{ relation, collection, field, onDelete, count, sample }``."""
        return {"relation": self.relation, "collection": self.collection, "field": self.field,
                "onDelete": self.on_delete, "count": len(self.ids), "sample": sample[:SAMPLE]}


@dataclass
class DeletePlan:
    """What deleting one item does: ``deletes`` (root first), ``clears`` and ``blockers``."""

    deletes: list[tuple[Any, Any, dict[str, Any] | None]] = field(default_factory=list)
    clears: list[tuple[Any, Any, Any, str, str, dict[str, Any]]] = field(default_factory=list)
    blockers: dict[str, Dependents] = field(default_factory=dict)


def holders(snap: Any, collection: str) -> list[tuple[Any, Any, Any]]:
    """``(reference, holder CollectionDef, holder FieldDef)`` for each live reference into ``collection``."""
    out = []
    for ref in relations_pointing_to(snap, collection):
        holder = snap.collection(ref.collection)
        fdef = holder.field(ref.field) if holder is not None else None
        if fdef is not None:
            out.append((ref, holder, fdef))
    return out


async def plan_delete(db: Any, dialect: str, snap: Any, coll: Any, rows: list[Any]) -> DeletePlan:
    """The plan for deleting ``rows`` of ``coll`` (nothing is written)."""
    plan = DeletePlan()
    doomed = {(coll.name, r["id"]) for r in rows}
    plan.deletes = [(coll, r, None) for r in rows]
    queue = list(plan.deletes)
    while queue:
        current, row, _ = queue.pop(0)
        for ref, holder, fdef in holders(snap, current.name):
            if ref.on_delete != "cascade":
                continue
            for found in await refs.referencing_rows(db, dialect, holder, fdef, ref.shape, current.name, row["id"]):
                if (holder.name, found["id"]) in doomed:
                    continue
                if len(doomed) >= MAX_CASCADE:
                    raise ApiError.conflict(f"The delete would cascade to more than {MAX_CASCADE} items")
                doomed.add((holder.name, found["id"]))
                cause = {"collection": current.name, "id": row["id"], "relation": ref.relation.id}
                plan.deletes.append((holder, found, cause))
                queue.append((holder, found, cause))
    for current, row, _ in plan.deletes:
        for ref, holder, fdef in holders(snap, current.name):
            if ref.on_delete == "cascade":
                continue
            found = [r for r in await refs.referencing_rows(db, dialect, holder, fdef, ref.shape, current.name,
                                                            row["id"])
                     if (holder.name, r["id"]) not in doomed]
            if not found:
                continue
            if ref.on_delete == "restrict":
                entry = plan.blockers.setdefault(ref.relation.id, Dependents(
                    ref.relation.id, holder.name, fdef.name, ref.on_delete))
                entry.ids.extend(r["id"] for r in found if r["id"] not in entry.ids)
            else:
                cause = {"collection": current.name, "id": row["id"], "relation": ref.relation.id}
                plan.clears.extend((ref, holder, r, current.name, row["id"], cause) for r in found)
    return plan


async def apply_plan(uow: Any, plan: DeletePlan, *, hard: bool = False) -> None:
    """Clear the set-null references, then delete (soft, or ``hard``) every planned item."""
    edits: dict[tuple[str, str], tuple[Any, Any, dict[str, Any], dict[str, Any]]] = {}
    for ref, holder, row, target, target_id, cause in plan.clears:
        key = (holder.name, row["id"])
        if key not in edits:
            edits[key] = (holder, row, dict(row["data"] or {}), cause)
        data = edits[key][2]
        data[ref.field] = refs.without(data.get(ref.field), ref.shape, target, target_id)
    for holder, row, data, cause in edits.values():
        # The schema orders this write whatever the caller may do in ``holder``: no guard.
        await writes.update_row(uow, holder, row, data, guard=None, cause=cause)
    for coll, row, cause in plan.deletes:
        await writes.delete_rows(uow, coll, [row], hard=hard, cause=cause)


async def visible_sample(db: Any, ids: list[str], holder: Any, read: Any, dialect: str,
                         snapshot: Any = None) -> list[str]:
    """Up to ``SAMPLE`` of ``ids`` the caller may read (none without read permission;
    ``snapshot``: the site's schema, for read conditions through relations)."""
    from plugins.items.core.rowfilter import apply_row_filter

    if not read.allowed or not ids:
        return []
    stmt = db.select(items, items.c.id).where(items.c.collection_id == holder.id, items.c.id.in_(ids[:1000]))
    stmt = apply_row_filter(stmt, read, dialect=dialect, table=items, coll=holder, snapshot=snapshot)
    return [r["id"] for r in await db.all(stmt.order_by(items.c.id).limit(SAMPLE))]
