"""A deleted collection takes its rules with it (the class of Directus CVE-2025-64746).

``collections.delete`` (a bus filter, inside the schema change's transaction) deletes every
rule of this site whose ``collection`` is the deleted one, so a collection created later under
the same name is granted by no rule written for the old one (nor restored with them: a
restored collection is granted only by rules written after its restore). Each rule removed is
audited as ``permission.delete`` (ids and names only), and ``access.changed`` is queued on the
unit of work, so after commit every worker drops the cached decisions and read plans of the
site (the ``collections.delete`` action drops them too, like ``fields.delete``). Rules of
the wildcard collection ``*`` stay: they govern every collection, present and future, by design.

Relations: deleting a collection detaches its relations, and deleting a relation removes no
rule. A rule of another collection whose ``conditions`` cross that relation
(``{"author": {"owner": {"_eq": "$CURRENT_USER"}}}``) is kept as it is: its condition no longer
compiles and so matches no row (it fails closed, and is logged). Removing or rewriting the
condition would widen that rule's rows; never do that.
"""

from __future__ import annotations

from typing import Any

from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.access import api
from plugins.access.tables import permissions, policies


async def drop_collection_rules(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``collections.delete``: delete the site's rules on the collection."""
    if not isinstance(payload, dict) or ctx.conn is None or ctx.site_id is None:
        return
    collection = payload.get("collection")
    if not isinstance(collection, str) or collection == "*":
        return
    db = SiteDB(ctx.site_id, ctx.conn)
    rows = await db.all(
        db.select(permissions, permissions.c.id, permissions.c.policy_id, permissions.c.action,
                  policies.c.name)
        .join(policies, policies.c.id == permissions.c.policy_id)
        .where(permissions.c.collection == collection, policies.c.site_id == ctx.site_id)
        .order_by(permissions.c.id))
    if not rows:
        return
    await db.execute(db.delete(permissions).where(permissions.c.collection == collection))
    for row in rows:
        await audit.record(ctx.conn, action="permission.delete", site_id=ctx.site_id, principal=ctx.principal,
                           target_type="permission", target_id=row["id"],
                           details={"policyId": row["policy_id"], "name": row["name"], "collection": collection,
                                    "action": row["action"], "reason": "collection deleted"},
                           request_id=ctx.request_id)
    if ctx.uow is not None:  # after commit: access snapshots and read plans of the site, every worker
        api.changed(ctx.uow)
