"""A deleted field takes its grants with it (the class of Directus CVE-2025-64746).

``fields.delete`` (a bus filter, inside the schema change's transaction) removes the field's
name from the ``fields`` of every rule of this site that names its collection, so a field
created later under the same name inherits nothing: it is granted only by rules written after
it. Each rule changed is audited as ``permission.update`` (ids and names only). The
``fields.delete`` action, after commit and on every worker (Redis fan-out), drops the cached
decisions of the site. Rules of the wildcard collection ``*`` are left alone: they name fields
in every collection, present and future, by design. A rule whose list becomes empty stays: it
still grants its rows, with ``id`` only.
"""

from __future__ import annotations

from typing import Any

from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.access.tables import permissions


async def drop_field_grants(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``fields.delete``: strip the field from the rules of its collection."""
    if not isinstance(payload, dict) or ctx.conn is None or ctx.site_id is None:
        return
    collection, name = payload.get("collection"), payload.get("field")
    if not isinstance(collection, str) or not isinstance(name, str):
        return
    db = SiteDB(ctx.site_id, ctx.conn)
    for row in await db.all(db.select(permissions).where(permissions.c.collection == collection)):
        fields = list(row["fields"] or [])
        if name not in fields:
            continue
        await db.execute(db.update(permissions).where(permissions.c.id == row["id"])
                         .values(fields=[f for f in fields if f != name]))
        await audit.record(ctx.conn, action="permission.update", site_id=ctx.site_id, principal=ctx.principal,
                           target_type="permission", target_id=row["id"],
                           details={"policyId": row["policy_id"], "collection": collection,
                                    "action": row["action"], "removedField": name},
                           request_id=ctx.request_id)


def forget_decisions(event: str, payload: Any, ctx: Any) -> None:
    """Action of ``fields.delete``: this worker's cached decisions of the site are stale."""
    access = getattr(ctx.kernel, "access", None)
    if access is not None and ctx.site_id is not None:
        access.invalidate(ctx.site_id)
