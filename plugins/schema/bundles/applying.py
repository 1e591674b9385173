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

from kernel.core.uow import UnitOfWork
from plugins.schema.bundles.diffing import Change, Plan
from plugins.schema.collections import collections
from plugins.schema.data_check import DATA_CHECK, holding_data
from plugins.schema.fields import fields
from plugins.schema.relations import relations
from plugins.schema.tables import schema_versions


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


async def apply_plan(uow: UnitOfWork, plan: Plan, *, allow_destructive: bool = False) -> dict[str, int]:
    """Run every change of ``plan`` in dependency order; returns ``{ created, updated, deleted }``.
    ``allow_destructive``: a field dropped with its data is allowed (else 409, ``delete_field``)."""
    for change in plan.of("relations", "delete"):
        await relations.delete_relation(uow, change.relation_id or "")
    for change in plan.of("collections", "delete"):
        await collections.delete_collection(uow, change.collection)
    for change in plan.of("collections", "create"):
        await collections.create_collection(uow, change.body or {})
    for change in plan.of("collections", "update"):
        await collections.update_collection(uow, change.collection, change.body or {})
    for change in plan.of("fields", "delete"):
        await fields.delete_field(uow, change.collection, change.field or "", allow_destructive=allow_destructive)
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


__all__ = ["DATA_CHECK", "apply_plan", "holding_data", "lock_schema"]
