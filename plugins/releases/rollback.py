"""Rolling a published release back: every item it published returns, in one transaction, to the
revision and status it had before the release (recorded by the publish: ``previous_revision_id``,
``previous_status`` of each entry).

Each entry is one ``items.update`` through the items API with the cause
``release-rollback:<id>``: the content of the recorded revision (``items.pinnable_revision``'s
``restore`` body: only the fields that differ) and the recorded status. So validation, the
caller's permissions, bus filters (the editorial gate), revisions, search and durable events
apply as for a PATCH, and the rollback's revisions can themselves be reverted. All or nothing:
each entry runs under a savepoint so that every blocker is found; any blocker rolls the whole
transaction back and answers 409 ``ROLLBACK_BLOCKED`` with the blockers. Without one, the same
transaction marks the release ``rolled_back`` and writes the audit record
``release_rolled_back``.

An item edited after the release was published (its latest revision that the release did not
write is no longer the one the publish recorded) is a blocker, ``CHANGED_SINCE_PUBLISH``: a
rollback never silently throws later work away. ``force`` (``{"force": true}``) returns such an
item too; its later edits stay in its revisions, so each can still be reverted to.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from plugins.items import api as items
from plugins.releases.publisher import GONE
from plugins.releases.records import full_record, load_entries, load_row
from plugins.releases.tables import release_items, releases

ROLLED_BACK = "rolled_back"
ROLLABLE = ("published", "partially_failed")
AUDIT_ACTION = "release_rolled_back"


class _Blocked(Exception):
    """Raised to roll the transaction back once every blocker is known."""


def not_published(status: str) -> ApiError:
    return ApiError(
        409,
        "RELEASE_NOT_PUBLISHED",
        f"Only a published release can be rolled back; this one is {status}",
        extensions={"status": status},
    )


def parse_body(body: Any) -> bool:
    """``force`` of a rollback body (``{}`` or ``{"force": bool}``); 400 otherwise."""
    reject_unknown(body, {"force"})
    force = body.get("force", False)
    if not isinstance(force, bool):
        raise ApiError.validation("'force' is a boolean", path=["force"])
    return force


async def rollback(
    kernel: Any, site_id: str, principal: Any, release_id: str, request_id: str = "internal", *,
    force: bool = False,
) -> dict[str, Any]:
    """Roll release ``release_id`` back as ``principal``: ``{ release, status, outcomes }``. 404,
    409 ``RELEASE_NOT_PUBLISHED`` (not published, or rolled back already), 409 ``ROLLBACK_BLOCKED``
    (``extensions.outcomes``: the entries that cannot go back, with their reason; nothing changed).
    ``force``: items edited since the publish go back too."""
    # -- more43: followed in GET /work like a publish (a refusal ends the record failed, with it)
    async with kernel.unit_of_work(site_id, principal, request_id) as uow:
        label = (await load_row(uow.db, release_id))["name"]
    async with kernel.work.tracked(site_id, "rollback", label, principal, target=("release", release_id)) as work:
        answer = await _rollback(kernel, site_id, principal, release_id, request_id, force)
        await work.step(len(answer["outcomes"]), total=len(answer["outcomes"]))
    return answer


async def _rollback(kernel: Any, site_id: str, principal: Any, release_id: str, request_id: str,
                    force: bool) -> dict[str, Any]:
    cause = f"release-rollback:{release_id}"
    ctx = items.context(kernel, site_id, principal, request_id)
    blockers: list[dict[str, Any]] = []
    try:
        async with kernel.unit_of_work(site_id, principal, request_id, cause) as uow:
            db = uow.db
            row = await load_row(db, release_id)
            locked = await db.execute(
                db.update(releases)
                .where(releases.c.id == release_id, releases.c.status.in_(ROLLABLE))
                .values(updated_at=now_utc())
            )
            if locked.rowcount == 0:
                raise not_published(row["status"])
            entries = [e for e in await load_entries(db, release_id) if e["outcome"] == "published"]
            for entry in entries:
                try:
                    async with uow.conn.begin_nested():
                        await _restore(ctx, entry, uow, cause, release_id, force)
                except ApiError as error:
                    blockers.append(
                        {
                            "collection": entry["collection"],
                            "itemId": entry["item_id"],
                            "reason": "ITEM_DELETED" if error.code in GONE else error.code,
                            "message": error.message[:300],
                        }
                    )
            if blockers:
                raise _Blocked
            await _finish(uow, release_id, entries)
            await audit.record(
                uow.conn,
                action=AUDIT_ACTION,
                site_id=site_id,
                principal=principal,
                target_type="release",
                target_id=release_id,
                request_id=request_id,
                details={
                    "releaseId": release_id,
                    "name": row["name"],
                    "itemCount": len(entries),
                    "fromStatus": row["status"],
                },
            )
    except _Blocked:
        raise ApiError(
            409,
            "ROLLBACK_BLOCKED",
            f"{len(blockers)} item(s) cannot return to their revision before the release; nothing changed",
            extensions={"outcomes": blockers},
        ) from None
    async with kernel.unit_of_work(site_id, principal, request_id) as uow:
        release = await full_record(uow.db, release_id)
    outcomes = [
        {
            "collection": e["collection"],
            "itemId": e["item_id"],
            "outcome": ROLLED_BACK,
            "revisionId": e["previous_revision_id"],
        }
        for e in entries
    ]
    return {"release": release, "status": ROLLED_BACK, "outcomes": outcomes}


async def _restore(ctx: Any, entry: Any, uow: Any, cause: str, release_id: str, force: bool) -> None:
    """One entry back to its recorded revision and status; 409 ``CHANGED_SINCE_PUBLISH`` when the
    item was edited after the publish (unless ``force``)."""
    collection, item_id = entry["collection"], entry["item_id"]
    if not entry["previous_revision_id"]:
        raise ApiError(409, "NO_PREVIOUS_REVISION", "The publish recorded no revision to return to")
    if not force:
        # The newest revision the release did not write: the one before the publish, unless
        # someone (or something) wrote the item since.
        latest = await items.revision_before(ctx, collection, item_id, f"release:{release_id}", uow=uow)
        if latest is not None and latest["id"] != entry["previous_revision_id"]:
            raise ApiError(409, "CHANGED_SINCE_PUBLISH",
                           f"The item was edited after the release was published (revision {latest['id']}); "
                           "roll back with force: true to return it anyway")
    pinned = await items.pinnable_revision(ctx, collection, item_id, entry["previous_revision_id"], uow=uow)
    body = dict(pinned["restore"])
    if entry["previous_status"]:
        body["status"] = entry["previous_status"]
    if body:
        await items.update(ctx, collection, item_id, body, uow=uow, cause=cause)


async def _finish(uow: Any, release_id: str, entries: list[Any]) -> None:
    db = uow.db
    now = now_utc()
    await db.execute(
        db.update(releases)
        .where(releases.c.id == release_id)
        .values(status=ROLLED_BACK, rolled_back_at=now, updated_at=now, next_run_at=None)
    )
    await db.execute(
        db.update(release_items)
        .where(release_items.c.release_id == release_id, release_items.c.outcome == "published")
        .values(outcome=ROLLED_BACK)
    )
