"""Erasure requests: create, (dual-control) confirm, execute.

A request names a collection and a filter (the items query language). It stores:

- ``subjectHash``: ``HMAC-SHA256(key, site | collection | canonical filter JSON)``, the key
  derived from the server's ``JWT_SECRET``; the filter's values are never stored, logged,
  audited or answered (docs/privacy.md, Erasure: an erasure answer never echoes the filter's values);
  ``filterFields`` keeps the field names the filter tests;
- the ids of the items the filter matched when the request was made (live and soft-deleted):
  execution erases those, so it needs no plaintext later.

With the site setting ``erasureDualControl`` (boolean, default false) a request starts
``awaiting_confirmation`` and ``POST .../confirm`` must come from another admin of the site
(the requester is 403 ``PERMISSION_DENIED`` with ``reason: dual_control``, and so is an
impersonation session, confirming or, under dual control, requesting); otherwise it starts
``confirmed``. ``POST .../execute`` runs once (409 ``CONFLICT`` before confirmation or after
execution): in one transaction it hard-deletes the items and all their revisions, versions,
pins and search rows (``items.api.erase``), emits the bus filter ``privacy.erase`` with
``{ collection, ids }`` (the regulated plugin crypto-shreds per-record keys there; a veto rolls
everything back), runs every plugin's erasure target (``register_erasure_targets``: the records
outside items holding the subject's values, and the subject's accounts in the site, see
``_subject``), and audits ``data_erased`` with ``recordCount``. After the commit, on SQLite,
the write-ahead log is checkpointed and truncated (``Database.checkpoint``), so no old page image
of the erased rows stays in the data dir; a checkpoint a reader keeps from completing is audited
``erasure_checkpoint_deferred`` and retried by the job ``privacy.checkpoint``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

from sqlalchemy import func

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import body_field, reject_unknown
from kernel.policy.audit import record as audit
from kernel.policy.privacy import Subject, erasure_targets
from plugins.accounts.api import members_by_email
from plugins.items import api as items
from plugins.privacy import consent
from plugins.privacy.tables import erasures
from plugins.settings.api import get_setting

DUAL_CONTROL = "erasureDualControl"
CHECKPOINT_JOB = "privacy.checkpoint"
ERASE_EVENT = "privacy.erase"
AWAITING, CONFIRMED, EXECUTED = "awaiting_confirmation", "confirmed", "executed"
MAX_REASON = 500
CHECKPOINT_RETRY_DELAY = 10.0  # seconds before the job retries a checkpoint a reader held up
CHECKPOINT_RETRIES = 8  # then with the queue's backoff, doubling from CHECKPOINT_RETRY_DELAY

log = logging.getLogger("svc.privacy")


def validate_dual_control(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def subject_hash(kernel: Any, site_id: str, collection: str, tree: Any) -> str:
    key = hmac.new(kernel.settings.resolved_jwt_secret().encode(), b"svc.privacy.subject", hashlib.sha256).digest()
    canonical = json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, f"{site_id}\x00{collection}\x00{canonical}".encode(), hashlib.sha256).hexdigest()


def filter_fields(tree: Any) -> list[str]:
    """The field names a filter tests (keys not starting with ``_``), never its values."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str) and not key.startswith("_"):
                    found.add(key[:64])
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    return sorted(found)[:50]


def request_record(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"], "collection": row["collection"], "subjectHash": row["subject_hash"],
        "filterFields": list(row["filter_fields"] or []), "reason": row["reason"], "status": row["status"],
        "dualControl": bool(row["dual_control"]), "matched": len(row["item_ids"] or []),
        "requestedBy": row["requested_by"], "confirmedBy": row["confirmed_by"], "executedBy": row["executed_by"],
        "recordCount": row["record_count"], "createdAt": iso(row["created_at"]),
        "confirmedAt": iso(row["confirmed_at"]), "executedAt": iso(row["executed_at"]),
    }


def parse_create(body: dict[str, Any]) -> tuple[str, Any, str]:
    reject_unknown(body, {"collection", "filter", "reason"})
    collection = body_field(body, "collection", str, max_length=64)
    reason = body_field(body, "reason", str, max_length=MAX_REASON)
    if not reason.strip():
        raise ApiError.validation("'reason' must not be empty", path=["reason"])
    tree = body.get("filter")
    if not isinstance(tree, dict) or not tree:
        # The message never repeats the value (it may be the subject's data).
        raise ApiError.validation("'filter' must be a non-empty filter object", path=["filter"])
    return collection, tree, reason


def _actor(principal: Any) -> str | None:
    return principal.user_id or principal.api_key_id


async def create(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    collection, tree, reason = parse_create(body)
    site_id = ctx.require_site()
    try:
        ids = await items.erasure_matches(ctx, collection, tree)
    except ApiError as exc:
        # A filter error may quote the offending value: answer the code and path only.
        if exc.status == 400:
            raise ApiError.validation("'filter' is not a valid filter of this collection",
                                      path=["filter"]) from None
        raise
    dual = bool(await get_setting(ctx.kernel, site_id, DUAL_CONTROL, False))
    if dual and ctx.principal.impersonator_id:
        # The request would be recorded as the impersonated admin's: the impersonator could then confirm it.
        raise ApiError.forbidden("Dual control: an erasure is not requested in an impersonation session",
                                 reason="dual_control")
    row = {"id": uuid7(), "collection": collection, "subject_hash": subject_hash(ctx.kernel, site_id, collection, tree),
           "filter_fields": filter_fields(tree), "item_ids": ids, "reason": reason,
           "status": AWAITING if dual else CONFIRMED, "dual_control": dual, "requested_by": _actor(ctx.principal),
           "confirmed_by": None, "executed_by": None, "record_count": None, "created_at": now_utc(),
           "confirmed_at": None, "executed_at": None}
    async with ctx.unit_of_work() as uow:
        await uow.db.insert(erasures, row)
        await audit(uow.conn, action="erasure_requested", site_id=site_id, principal=ctx.principal,
                    target_type="erasure", target_id=row["id"],
                    details={"collection": collection, "matched": len(ids), "dualControl": dual},
                    ip=ctx.client_ip, request_id=ctx.request_id)
    return request_record({**row, "site_id": site_id})


async def _load(db: Any, request_id: str) -> Any:
    # No NUL: PostgreSQL refuses it in text (a 500); such an id names nothing.
    row = await db.one(db.select(erasures).where(erasures.c.id == request_id)) \
        if len(request_id) <= 36 and "\x00" not in request_id else None
    if row is None:
        raise ApiError.not_found("Erasure request not found")
    return row


async def list_requests(ctx: Any, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        total = int(await db.scalar(db.select(erasures, func.count())) or 0)
        rows = await db.all(db.select(erasures).order_by(erasures.c.created_at.desc(), erasures.c.id.desc())
                            .limit(limit).offset(offset))
    return [request_record(r) for r in rows], total


async def get_request(ctx: Any, request_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        return request_record(await _load(db, request_id))


async def confirm(ctx: Any, request_id: str) -> dict[str, Any]:
    async with ctx.unit_of_work() as uow:
        row = await _load(uow.db, request_id)
        if row["status"] != AWAITING:
            raise ApiError.conflict(f"The request is {row['status']}; only one awaiting confirmation is confirmed")
        me = _actor(ctx.principal)
        if ctx.principal.kind not in ("user", "external"):
            raise ApiError.forbidden("A confirmation comes from an admin user, not an API key", reason="dual_control")
        if ctx.principal.impersonator_id:  # whoever impersonates a second admin is not one
            raise ApiError.forbidden("Dual control: a second admin confirms in person, not by impersonation",
                                     reason="dual_control")
        if me is None or me == row["requested_by"]:
            raise ApiError.forbidden("Dual control: a second, different admin must confirm", reason="dual_control")
        now = now_utc()
        claimed = await uow.db.execute(uow.db.update(erasures).where(
            erasures.c.id == row["id"], erasures.c.status == AWAITING).values(
            status=CONFIRMED, confirmed_by=me, confirmed_at=now))
        if claimed.rowcount != 1:
            raise ApiError.conflict("The request was confirmed meanwhile")
        await audit(uow.conn, action="erasure_confirmed", site_id=uow.site_id, principal=ctx.principal,
                    target_type="erasure", target_id=row["id"], ip=ctx.client_ip, request_id=ctx.request_id)
        return request_record({**row, "status": CONFIRMED, "confirmed_by": me, "confirmed_at": now})


async def execute(ctx: Any, request_id: str) -> dict[str, Any]:
    async with ctx.unit_of_work() as uow:
        row = await _load(uow.db, request_id)
        if row["status"] == AWAITING:
            raise ApiError.conflict("The request awaits a second admin's confirmation (erasureDualControl)")
        now, me = now_utc(), _actor(ctx.principal)
        # Claim first with one conditional UPDATE: of concurrent executions (PostgreSQL's row lock
        # re-checks the status) exactly one erases and audits; the others answer 409.
        claimed = await uow.db.execute(uow.db.update(erasures).where(
            erasures.c.id == row["id"], erasures.c.status == CONFIRMED).values(
            status=EXECUTED, executed_by=me, executed_at=now))
        if row["status"] != CONFIRMED or claimed.rowcount != 1:
            raise ApiError.conflict("The request was executed already")
        ids = list(row["item_ids"] or [])
        cause = f"erasure:{row['id']}"
        subject = await _subject(ctx, uow, row["collection"], ids, cause)
        count = await items.erase(ctx, row["collection"], ids, uow=uow, cause=cause) if ids else 0
        await uow.filter(ERASE_EVENT, {"collection": row["collection"], "ids": ids})
        reached = await _erase_beyond_items(ctx.kernel, uow, subject)
        await uow.db.execute(uow.db.update(erasures).where(erasures.c.id == row["id"]).values(
            record_count=count, item_ids=[]))
        await audit(uow.conn, action="data_erased", site_id=uow.site_id, principal=ctx.principal,
                    target_type="erasure", target_id=row["id"],
                    details={"collection": row["collection"], "recordCount": count,
                             **({"reached": sorted(reached)} if reached else {})},
                    ip=ctx.client_ip, request_id=ctx.request_id)
    if not await ctx.kernel.db.checkpoint():
        await _checkpoint_later(ctx, row["id"])
    return {**request_record({**row, "status": EXECUTED, "executed_by": me, "executed_at": now, "record_count": count,
                              "item_ids": ids}), "reached": reached}


async def _subject(ctx: Any, uow: Any, collection: str, ids: list[str], cause: str) -> Subject:
    """Whom the request erases beyond its items: the values only they hold, and the accounts of
    the site whose email address is one of those values (read before the items go)."""
    terms = await items.erasure_values(ctx, collection, ids, uow=uow) if ids else []
    wanted = [t for t in terms if "@" in t and len(t) <= 320]
    user_ids = [r["id"] for r in await members_by_email(uow.db, wanted)]
    return Subject(site_id=uow.site_id, terms=tuple(terms), user_ids=tuple(sorted(user_ids)), cause=cause)


async def _erase_beyond_items(kernel: Any, uow: Any, subject: Subject) -> dict[str, int]:
    """Run every plugin's erasure target (``register_erasure_targets``) in the transaction: the
    counts of records each reached, by target name (no values)."""
    reached: dict[str, int] = {}
    if not subject.terms and not subject.user_ids:
        return reached
    for target in sorted(erasure_targets(kernel).values(), key=lambda t: (t.order, t.name)):
        count = await target.erase(uow, subject)
        if count:
            reached[target.name] = count
    if subject.user_ids:
        uow.action(consent.CHANGED, {"siteId": uow.site_id})
    return reached


async def _checkpoint_later(ctx: Any, request_id: str) -> None:
    """A reader kept the checkpoint from completing: the log still holds the erased rows' old
    page images. Say so in the audit trail, and queue the job that retries it."""
    log.warning("erasure %s: the WAL checkpoint did not complete; the job %s retries it", request_id, CHECKPOINT_JOB)
    async with ctx.unit_of_work() as uow:
        await ctx.kernel.jobs.enqueue(CHECKPOINT_JOB, uow=uow, dedupe_key="wal", delay=CHECKPOINT_RETRY_DELAY)
        await audit(uow.conn, action="erasure_checkpoint_deferred", site_id=uow.site_id, principal=ctx.principal,
                    target_type="erasure", target_id=request_id, ip=ctx.client_ip, request_id=ctx.request_id)


async def checkpoint_job(kernel: Any) -> None:
    """``privacy.checkpoint``: the write-ahead log checkpoint an erasure could not complete; a
    failure is retried with the queue's backoff."""
    if not await kernel.db.checkpoint():
        raise RuntimeError("the WAL checkpoint did not complete (a reader holds an older snapshot); "
                           "the log still holds erased rows' old page images")
