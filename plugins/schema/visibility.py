"""What of a site's schema a principal may see: the collections and fields it may read.

Directus's rule: the schema routes (``/collections``, ``/fields``, ``/relations``, bundles) show a
member only what its ``read`` permissions reach, so a field's name and meta stay as hidden as
its values. The instance admin and site admins see everything. A collection the member may not
read answers 403 ``PERMISSION_DENIED`` (as its items do); a field it may not read answers 404,
like a field that does not exist, so a name cannot be probed.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.policy.access import Decision


class SchemaView:
    """The read decisions of one principal in one site, asked once per collection."""

    def __init__(self, snapshot: Any, principal: Any) -> None:
        self.snapshot = snapshot
        self.principal = principal
        self._decisions: dict[str, Decision] = {}

    def decision(self, collection: str) -> Decision:
        found = self._decisions.get(collection)
        if found is None:
            found = self._decisions[collection] = self.snapshot.decide(collection, "read", self.principal)
        return found

    def collection(self, name: str) -> bool:
        """Whether the principal may read some items of ``name``."""
        return self.decision(name).allowed

    def field(self, collection: str, name: str) -> bool:
        """Whether the principal may read field ``name`` of ``collection`` on some row."""
        return self.decision(collection).field_allowed(name)

    def require(self, collection: str) -> None:
        """403 ``PERMISSION_DENIED`` unless the principal may read ``collection``."""
        if not self.collection(collection):
            raise ApiError.forbidden(f"You do not have permission to read the collection '{collection[:64]}'",
                                     reason="no_permission")

    def relation(self, record: dict[str, Any]) -> bool:
        """Whether a relation (API shape) shows: the principal reads one of its two ends."""
        if self.field(record["collection"], record["field"]):
            return True
        related, field = record.get("relatedCollection"), record.get("relatedField")
        return bool(related and field and self.field(related, field))


async def schema_view(ctx: Any) -> SchemaView | None:
    """The request principal's view of the schema; ``None`` when it sees everything (admins)."""
    if ctx.principal.is_admin:
        return None
    snapshot = await ctx.kernel.access.snapshot(ctx.principal, ctx.require_site())
    if snapshot.admin:
        return None
    return SchemaView(snapshot, ctx.principal)


def visible_fields(view: SchemaView | None, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Field records (API shape, with ``collection`` and ``field``) the view lets through."""
    if view is None:
        return records
    return [r for r in records if view.field(r["collection"], r["field"])]
