"""What every schema write does besides its own rows: version, events, audit.

Order inside the unit of work: ``begin`` bumps the site's schema version first (that write
takes the lock that serialises schema changes of a site, so the checks that follow see a
stable schema); then the change is validated; ``check`` runs the bus filter (which may veto);
the rows are written; ``done`` writes the audit record and the durable event (the kernel's
event log: ``collections.*``, ``fields.*``, ``relations.*`` with the collection and, for fields
and relations, the field's name) and queues the action event. After
commit, ``schema.changed`` tells every worker to drop its cached snapshot of the site.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table
from sqlalchemy.exc import IntegrityError

from kernel import audit
from kernel.db.meta import dialect_insert, now_utc
from kernel.db.uow import UnitOfWork
from plugins.schema.bodies import conflict
from plugins.schema.snapshot import SchemaSnapshot, load_snapshot
from plugins.schema.tables import schema_versions

SCHEMA_CHANGED = "schema.changed"
FIELD_TYPE_CHANGE = "fields.type_change"


async def bump_version(uow: UnitOfWork) -> int:
    """Add one to the site's schema version (creating the counter) and queue ``schema.changed``."""
    now = now_utc()
    upsert = dialect_insert(uow.kernel.db.dialect)(schema_versions).values(site_id=uow.site_id, version=1, updated_at=now)
    stmt = upsert.on_conflict_do_update(
        index_elements=[schema_versions.c.site_id],
        set_={"version": schema_versions.c.version + 1, "updated_at": now},
    ).returning(schema_versions.c.version)
    db = uow.db
    version = int(await db.scalar(db.scope(stmt)))
    uow.action(SCHEMA_CHANGED, {"siteId": uow.site_id, "version": version})
    return version


async def begin(uow: UnitOfWork) -> SchemaSnapshot:
    """Start a schema change: bump the version, then read the schema as this transaction sees it."""
    await bump_version(uow)
    return await load_snapshot(uow.db)


def payload(uow: UnitOfWork, collection: str, field: str | None = None, **extra: Any) -> dict[str, Any]:
    """``{ siteId, collection, field?, ... }``: the shape of every schema event."""
    out: dict[str, Any] = {"siteId": uow.site_id, "collection": collection}
    if field is not None:
        out["field"] = field
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


async def check(uow: UnitOfWork, event: str, data: dict[str, Any]) -> None:
    """Run the bus filters of ``event`` inside the transaction; a handler vetoes by raising.

    A filter's replacement payload is not applied: the change was validated already, and a
    handler that wants a different schema raises with the reason instead.
    """
    await uow.filter(event, data)


async def done(uow: UnitOfWork, event: str, data: dict[str, Any], *, target_type: str,
               target_id: str) -> None:
    """Audit the change (names only) and queue its action event for after commit."""
    details: dict[str, Any] = {k: data[k] for k in ("collection", "field", "relationId") if k in data}
    kind, _, verb = event.partition(".")
    await audit.record(uow.conn, action=f"schema.{kind.rstrip('s')}.{verb}", site_id=uow.site_id,
                       principal=uow.principal, target_type=target_type, target_id=target_id[:300],
                       details=details, request_id=uow.request_id)
    # The durable event (kernel event log), in this transaction: names only, like the audit.
    uow.emit(event, collection=data.get("collection"),
             fields=[data["field"]] if isinstance(data.get("field"), str) else None)
    uow.action(event, data)


async def insert_row(uow: UnitOfWork, table: Table, row: dict[str, Any], what: str, path: list[Any]) -> None:
    """Insert a schema row; a unique or foreign key violation is a 409, not a 500.

    The version lock taken by ``begin`` makes the checks before this exact, so this only
    catches what they cannot see (a site deleted meanwhile, a constraint added later).
    """
    try:
        await uow.db.insert(table, row)
    except IntegrityError as exc:
        raise conflict(f"{what} conflicts with the current schema", path) from exc
