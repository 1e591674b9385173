"""Release records as the API shows them, the row loaders, and the errors of the area."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.db.meta import iso
from plugins.releases.tables import release_items, releases

ERROR_CODES: dict[str, tuple[int, str]] = {
    "EMPTY_RELEASE": (422, "Publish of a release with no items."),
    "ALREADY_PUBLISHED": (409, "Publish of a release that is already published."),
    "RELEASE_IMMUTABLE": (409, "Editing a published release."),
    "ITEM_NOT_FOUND": (404, "A release entry names an item that does not exist in this site."),
    "RELEASE_NOT_PUBLISHED": (409, "Rolling back a release that is not published (or was rolled back already)."),
    "ROLLBACK_BLOCKED": (409, "A rollback some item of the release cannot take; nothing changed."),
    "NO_PREVIOUS_REVISION": (409, "A rollback outcome reason: the publish recorded no revision to return to."),
    "CHANGED_SINCE_PUBLISH": (409, "A rollback outcome reason: the item was edited after the release was published."),
}


def not_found() -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", "No such release in this site")


def immutable() -> ApiError:
    return ApiError(409, "RELEASE_IMMUTABLE", "The release is published; its items and schedule cannot change")


def entry_record(row: Any) -> dict[str, Any]:
    return {"collection": row["collection"], "itemId": row["item_id"], "targetStatus": row["target_status"],
            "revisionId": row["revision_id"], "versionKey": row["version_key"], "outcome": row["outcome"],
            "reason": row["reason"], "previousRevisionId": row["previous_revision_id"]}


def release_record(row: Any, item_count: int, entries: list[Any] | None = None) -> dict[str, Any]:
    out = {
        "id": row["id"], "name": row["name"], "atomicityMode": row["atomicity_mode"], "status": row["status"],
        "publishAt": iso(row["publish_at"]), "maintenanceWindow": row["maintenance_window"],
        "createdBy": row["created_by"], "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"]),
        "publishedAt": iso(row["published_at"]), "nextRunAt": iso(row["next_run_at"]),
        "lastError": row["last_error"], "itemCount": item_count, "rolledBackAt": iso(row["rolled_back_at"]),
    }
    if entries is not None:
        out["items"] = [entry_record(e) for e in entries]
    return out


async def load_row(db: Any, release_id: str) -> Any:
    """The release ``release_id`` of ``db``'s site, or 404."""
    if not isinstance(release_id, str) or not 1 <= len(release_id) <= 36:
        raise not_found()
    row = await db.one(db.select(releases).where(releases.c.id == release_id))
    if row is None:
        raise not_found()
    return row


async def load_entries(db: Any, release_id: str) -> list[Any]:
    return list(await db.all(db.select(release_items).where(release_items.c.release_id == release_id)
                             .order_by(release_items.c.position)))


async def count_entries(db: Any, release_id: str) -> int:
    return int(await db.scalar(db.select(release_items, func.count()).where(
        release_items.c.release_id == release_id)) or 0)


async def full_record(db: Any, release_id: str) -> dict[str, Any]:
    row = await load_row(db, release_id)
    entries = await load_entries(db, release_id)
    return release_record(row, len(entries), entries)
