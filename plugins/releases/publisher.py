"""ReleasePublisher: publish a release's items through the items API, as one principal.

Every entry is one ``items.update`` (``{ status: targetStatus }``, after restoring a pinned
revision or promoting a named version) with the cause ``release:<id>``: the editorial gate (a
bus filter of the editorial plugin), validation, the publisher's permissions, hooks, revisions
and durable events apply as they do to a PATCH, and the events move the delivery fingerprint.

- ``all_or_nothing``: one transaction runs every entry, each under a savepoint (the
  pre-flight: a refused entry rolls back to its savepoint, and the next entries still run, so
  every blocker is found). Any blocker rolls the whole transaction back: nothing is published
  (status ``failed``, blockers ``failed`` with their reason, the others ``skipped``). Without
  one, the same transaction marks the release ``published`` and commits: no item is visible as
  published before it does, and each entry is written once.
- ``best_effort``: each entry in its own transaction; ``published`` when all went live,
  ``partially_failed`` when some did, ``failed`` when none did.

Reasons are the error codes of the refused writes: ``EDITORIAL_GATE_REQUIRED``,
``ITEM_DELETED`` (the item is gone or hidden from the publisher), ``VALIDATION_FAILED``,
``PERMISSION_DENIED``, ``REVISION_STAGED``...
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, update

from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from plugins.items import api as items
from plugins.releases import scheduler
from plugins.releases.records import full_record, load_entries, load_row
from plugins.releases.tables import release_items, releases

log = logging.getLogger("svc.releases")
GONE = ("RECORD_NOT_FOUND", "NOT_FOUND")


class _Blocked(Exception):
    """Raised to roll the all-or-nothing transaction back once it has met every blocker."""


@dataclass
class Outcome:
    collection: str
    item_id: str
    outcome: str  # published | skipped | failed
    reason: str | None = None
    message: str | None = None
    previous: dict[str, Any] | None = None  # published: the revision and status a rollback returns to

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"collection": self.collection, "itemId": self.item_id, "outcome": self.outcome}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def _reason(error: ApiError) -> str:
    return "ITEM_DELETED" if error.code in GONE else error.code


class ReleasePublisher:
    """Publishes release ``release_id`` of ``site_id`` as ``principal``."""

    def __init__(self, kernel: Any, site_id: str, principal: Any, release_id: str,
                 request_id: str = "internal") -> None:
        self.kernel = kernel
        self.site_id = site_id
        self.principal = principal
        self.release_id = release_id
        self.request_id = request_id
        self.cause = f"release:{release_id}"
        self.ctx = items.context(kernel, site_id, principal, request_id)

    def _uow(self) -> Any:
        return self.kernel.unit_of_work(self.site_id, self.principal, self.request_id, self.cause)

    async def _apply(self, entry: Any, uow: Any) -> dict[str, Any] | None:
        """One entry's writes in ``uow``; returns the item's revision and status before them
        (``items.revision_before``), which a rollback returns it to."""
        collection, item_id = entry["collection"], entry["item_id"]
        body: dict[str, Any] = {"status": entry["target_status"]}
        if entry["revision_id"]:
            pinned = await items.pinnable_revision(self.ctx, collection, item_id, entry["revision_id"], uow=uow)
            body = {**pinned["restore"], "status": entry["target_status"]}
        elif entry["version_key"]:
            await items.promote_version(self.ctx, collection, item_id, entry["version_key"], uow=uow,
                                        cause=self.cause)
        await items.update(self.ctx, collection, item_id, body, uow=uow, cause=self.cause)
        return await items.revision_before(self.ctx, collection, item_id, self.cause, uow=uow)

    async def publish(self) -> dict[str, Any]:
        """Publish now: ``{ release, status, outcomes }``. 404, 409 ``ALREADY_PUBLISHED``, 422
        ``EMPTY_RELEASE``; blocked items are outcomes, not errors."""
        async with self.kernel.db.connect() as conn:
            from kernel.tenancy.scope import SiteDB

            db = SiteDB(self.site_id, conn)
            row = await load_row(db, self.release_id)
            entries = await load_entries(db, self.release_id)
        if row["status"] == "published":
            raise ApiError(409, "ALREADY_PUBLISHED", "The release is already published")
        if not entries:
            raise ApiError(422, "EMPTY_RELEASE", "The release has no items to publish")
        # -- govern43: followed by every admin of the site in GET /work while it runs
        async with self.kernel.work.tracked(self.site_id, "publish", row["name"], self.principal,
                                            target=("release", self.release_id), total=len(entries)) as work:
            if row["atomicity_mode"] == "all_or_nothing":
                outcomes, status = await self._all_or_nothing(entries)
            else:
                outcomes, status = await self._best_effort(entries, work)
            await work.step(len(entries))
            failed = sum(o.outcome != "published" for o in outcomes)
            if failed:
                work.error = f"{status}: {failed} of {len(outcomes)} items not published"
        async with self._uow() as uow:
            release = await full_record(uow.db, self.release_id)
        return {"release": release, "status": status, "outcomes": [o.record() for o in outcomes]}

    async def _try_all(self, entries: list[Any]) -> list[Outcome | None]:
        """Run every entry in one transaction, each under a savepoint, collecting each blocker.
        No blocker: the release is marked published and the transaction commits. A blocker: the
        whole transaction rolls back (the pre-flight's answer is the blockers)."""
        blockers: list[Outcome | None] = []
        previous: list[dict[str, Any] | None] = []
        try:
            async with self._uow() as uow:
                await self._lock(uow)
                for entry in entries:
                    try:
                        async with uow.conn.begin_nested():
                            previous.append(await self._apply(entry, uow))
                        blockers.append(None)
                    except ApiError as error:
                        blockers.append(Outcome(entry["collection"], entry["item_id"], "failed", _reason(error),
                                                error.message))
                if any(blockers):
                    raise _Blocked
                await self._finish(uow, [Outcome(e["collection"], e["item_id"], "published", previous=p)
                                         for e, p in zip(entries, previous, strict=True)], "published")
        except _Blocked:
            pass
        return blockers

    async def _lock(self, uow: Any) -> None:
        """Take the release's row for this transaction; 409 if another publish got there first."""
        db = uow.db
        done = await db.execute(db.update(releases).where(
            releases.c.id == self.release_id, releases.c.status != "published").values(updated_at=now_utc()))
        if done.rowcount == 0:
            await load_row(db, self.release_id)  # 404 if it was deleted meanwhile
            raise ApiError(409, "ALREADY_PUBLISHED", "The release is already published")

    async def _all_or_nothing(self, entries: list[Any]) -> tuple[list[Outcome], str]:
        blockers = await self._try_all(entries)
        if not any(blockers):
            return [Outcome(e["collection"], e["item_id"], "published") for e in entries], "published"
        outcomes = [b or Outcome(e["collection"], e["item_id"], "skipped", "RELEASE_BLOCKED")
                    for b, e in zip(blockers, entries, strict=True)]
        async with self._uow() as uow:
            await self._lock(uow)
            await self._finish(uow, outcomes, "failed")
        return outcomes, "failed"

    async def _best_effort(self, entries: list[Any], work: Any) -> tuple[list[Outcome], str]:
        outcomes = []
        for n, entry in enumerate(entries):
            if n:
                await work.step(n)  # after the previous entry's transaction (SQLite has one writer)
            try:
                async with self._uow() as uow:
                    before = await self._apply(entry, uow)
                outcomes.append(Outcome(entry["collection"], entry["item_id"], "published", previous=before))
            except ApiError as error:
                outcomes.append(Outcome(entry["collection"], entry["item_id"], "failed", _reason(error),
                                        error.message))
        published = sum(o.outcome == "published" for o in outcomes)
        status = "published" if published == len(outcomes) else "partially_failed" if published else "failed"
        async with self._uow() as uow:
            await self._lock(uow)
            await self._finish(uow, outcomes, status)
        return outcomes, status

    async def _finish(self, uow: Any, outcomes: list[Outcome], status: str) -> None:
        """Record the status and each entry's outcome; a published release needs no more runs."""
        db = uow.db
        now = now_utc()
        values: dict[str, Any] = {"status": status, "updated_at": now, "next_run_at": None,
                                  "last_error": None if status == "published" else _summary(outcomes)}
        if status == "published":
            values["published_at"] = now
        await db.execute(db.update(releases).where(releases.c.id == self.release_id).values(**values))
        # One statement, many parameter sets (executemany): a 1,000-item release in one round trip.
        stmt = update(release_items).where(
            release_items.c.site_id == self.site_id, release_items.c.release_id == self.release_id,
            release_items.c.collection == bindparam("b_collection"), release_items.c.item_id == bindparam("b_item")
        ).values(outcome=bindparam("b_outcome"), reason=bindparam("b_reason"), message=bindparam("b_message"),
                 previous_revision_id=bindparam("b_prev_id"), previous_status=bindparam("b_prev_status"))
        await uow.conn.execute(stmt, [
            {"b_collection": o.collection, "b_item": o.item_id, "b_outcome": o.outcome, "b_reason": o.reason,
             "b_message": (o.message or "")[:500] or None,
             "b_prev_id": (o.previous or {}).get("id"), "b_prev_status": (o.previous or {}).get("status")}
            for o in outcomes])
        await scheduler.unschedule(uow, self.release_id)


def _summary(outcomes: list[Outcome]) -> str:
    failed = [o for o in outcomes if o.outcome == "failed"]
    first = failed[0] if failed else None
    text = f"{len(failed)} of {len(outcomes)} items failed"
    return f"{text}; first: {first.collection}/{first.item_id} {first.reason}" if first else text
