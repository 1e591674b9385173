"""Carry out a plan inside one unit of work, through the schema's own write services.

Every change goes through ``create_collection``, ``update_field``, ``delete_relation`` and the
rest, so each one bumps the schema version, runs its bus filter (where the items plugin may
veto a change that would lose data), writes its audit record and queues its action event,
exactly as the REST routes do. A plan with no change calls nothing: no version bump, no event.

The order resolves what depends on what: relations go before the fields and collections they
hang on; collections are deleted before others are created (a name may differ only in case);
fields come before the relations that use them. A relation whose ``onDelete`` becomes
``set null`` is updated after the fields (its holder may stop being required first); one that
becomes ``restrict`` or ``cascade`` before them (its holder may become required after).
"""

from __future__ import annotations

from typing import Any

from kernel.bus import EventContext
from kernel.db.uow import UnitOfWork
from plugins.schema import collections, fields, relations
from plugins.schema.diffing import Change, Plan
from plugins.schema.tables import schema_versions

DATA_CHECK = "schema.data_check"


async def lock_schema(uow: UnitOfWork) -> None:
    """Take the site's schema write lock without bumping the version.

    A write that changes nothing: on PostgreSQL it locks the version row, on SQLite it takes the
    database's write lock. The plan is read after it, so a concurrent schema change cannot slip
    in between reading the schema and applying the plan.
    """
    db = uow.db
    await db.execute(db.update(schema_versions).values(version=schema_versions.c.version))


def _relation_updates(plan: Plan, *, set_null: bool) -> list[Change]:
    return [c for c in plan.of("relations", "update") if ((c.body or {}).get("onDelete") == "set null") == set_null]


async def apply_plan(uow: UnitOfWork, plan: Plan) -> dict[str, int]:
    """Run every change of ``plan`` in dependency order; returns ``{ created, updated, deleted }``."""
    for change in plan.of("relations", "delete"):
        await relations.delete_relation(uow, change.relation_id or "")
    for change in plan.of("collections", "delete"):
        await collections.delete_collection(uow, change.collection)
    for change in plan.of("collections", "create"):
        await collections.create_collection(uow, change.body or {})
    for change in plan.of("collections", "update"):
        await collections.update_collection(uow, change.collection, change.body or {})
    for change in plan.of("fields", "delete"):
        await fields.delete_field(uow, change.collection, change.field or "")
    for change in plan.of("fields", "create"):
        await fields.create_field(uow, change.collection, change.body or {})
    for change in _relation_updates(plan, set_null=False):
        await relations.update_relation(uow, change.relation_id or "", change.body or {})
    for change in plan.of("fields", "update"):
        await fields.update_field(uow, change.collection, change.field or "", change.body or {})
    for change in _relation_updates(plan, set_null=True):
        await relations.update_relation(uow, change.relation_id or "", change.body or {})
    for change in plan.of("relations", "create"):
        await relations.create_relation(uow, change.body or {})
    return {action + "d": sum(len(plan.of(r, action)) for r in ("collections", "fields", "relations"))
            for action in ("create", "update", "delete")}


async def holding_data(kernel: Any, ctx: EventContext, deletes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The deletes among ``deletes`` whose collection or field holds data.

    Asked through the bus filter ``schema.data_check`` with ``{ siteId, targets: [{ collection,
    collectionId, field? }] }``: a handler (the items plugin) sets ``hasData: true`` on each
    target that holds data, in place or in a returned payload. Nobody answering means no data.
    """
    if not deletes:
        return []
    targets = [{k: d[k] for k in ("collection", "collectionId", "field") if k in d} for d in deletes]
    payload = {"siteId": ctx.site_id, "targets": targets}
    result = await kernel.bus.filter(DATA_CHECK, payload, ctx)
    answered = result.get("targets") if isinstance(result, dict) else None
    if not isinstance(answered, list) or len(answered) != len(targets):
        answered = targets
    return [{**d, "hasData": True} for d, t in zip(deletes, answered, strict=True)
            if isinstance(t, dict) and t.get("hasData") is True]
