"""``POST /email/send`` and ``/email/test``: validate, render once, filter, send now or queue.

- Every send is counted against the site's ``SVC_RATE_LIMIT_EMAIL`` (per minute, all senders of
  the site together): 429 ``RATE_LIMITED`` past it. Without SMTP every send is 503
  ``EMAIL_NOT_CONFIGURED`` before anything else (degraded mode).
- ``category`` is ``transactional`` (default: one message to every ``to`` and ``cc``) or
  ``marketing``: suppressed recipients are dropped first (case-insensitive), and each remaining
  recipient gets a message of their own with ``List-Unsubscribe: <…/email/unsubscribe?token=…>``
  and ``List-Unsubscribe-Post: List-Unsubscribe=One-Click`` (RFC 8058); a template may show the
  same link with ``{{unsubscribeUrl}}``. Recipients who are members of the site without
  ``marketing`` consent, or who restrict processing, are dropped too (``withoutConsent``;
  ``kernel.policy.privacy.marketing_excluded``: nobody is dropped when no privacy plugin keeps consent).
- More than ``SVC_EMAIL_QUEUE_THRESHOLD`` recipients: the rendered message is stored once as a
  batch and one ``email.deliver`` job per recipient sends it, with retries (202). Otherwise the
  mail leaves during the request (200); a transport failure is 502 ``DELIVERY_FAILED``.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import func

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.base.timestamps import iso
from kernel.db.meta import now_utc
from kernel.http.media import reject_unknown
from kernel.mailer import DeliveryFailed, MailerNotConfigured, OutgoingEmail
from kernel.policy.privacy import marketing_excluded
from kernel.tenancy.service import get_site_cached
from plugins.email import addresses, catalog, render, smtp_site, suppressions, tokens
from plugins.email.tables import batches

log = logging.getLogger("svc.email")

JOB = "email.deliver"
PRUNE_JOB = "email.batches.prune"
CATEGORIES = ("transactional", "marketing")
MAX_RECIPIENTS = 1000
MAX_CC = 50
BATCH_DAYS = 7
# Rendered in place of {{unsubscribeUrl}}, then replaced per recipient: the template is rendered
# once for a whole list, not once per address.
SENTINEL = "svc-unsubscribe-url-5b0d7c2e"
SEND_KEYS = {"to", "cc", "replyTo", "variables", "templateKey", "inline", "category", "sendAt"}


def not_configured() -> ApiError:
    return ApiError(503, "EMAIL_NOT_CONFIGURED", "Email is not configured on this server (SVC_SMTP_HOST)")


def delivery_failed() -> ApiError:
    return ApiError(502, "DELIVERY_FAILED", "The email could not be delivered")


async def _gate(ctx: Any) -> Any:
    """Degraded mode first, then the site's send budget; the site's mailer (its own SMTP server,
    or the server's: ``smtp_site``)."""
    kernel = ctx.kernel
    mailer = await smtp_site.mailer_for(kernel, ctx.require_site())
    if not mailer.configured:
        raise not_configured()
    limit = int(kernel.settings.get("rate_limit_email") or 0)
    if limit:
        decision = await kernel.rate_limiter.hit(f"email:send:{ctx.require_site()}", limit, 60.0)
        if not decision.allowed:
            retry = max(int(decision.reset - now_utc().timestamp()), 1)
            raise ApiError(429, "RATE_LIMITED", f"Too many sends from this site; retry in {retry} seconds",
                           headers={"Retry-After": str(retry)})
    return mailer


def unsubscribe_url(kernel: Any, site_id: str, email: str) -> str:
    base = kernel.settings.get("email_base_url") or "http://127.0.0.1:8000"
    token = tokens.issue(kernel.settings.resolved_jwt_secret(), site_id, email)
    return f"{base}/api/v1/email/unsubscribe?{urlencode({'token': token})}"


def _inline(value: Any) -> tuple[str, str | None, str | None]:
    if not isinstance(value, dict):
        raise ApiError.validation("'inline' must be an object { subject, html?, text? }", path=["inline"])
    for key in value:
        if key not in ("subject", "html", "text"):
            raise ApiError.validation(f"Unknown field '{key}'", path=["inline", key])
    subject = value.get("subject")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > catalog.MAX_SUBJECT:
        raise ApiError.validation("'inline.subject' is required", path=["inline", "subject"])
    render.check_header_text(subject, ["inline", "subject"])
    parts: list[str | None] = []
    for name in ("html", "text"):
        part = value.get(name)
        if part is not None and (not isinstance(part, str) or len(part) > render.MAX_SOURCE_CHARS):
            raise ApiError.validation(f"'inline.{name}' is a string", path=["inline", name])
        parts.append(part or None)
    if not (parts[0] or parts[1]):
        raise ApiError.validation("'inline' needs 'html' or 'text'", path=["inline", "html"])
    return subject, parts[0], parts[1]


def parse_send(body: dict[str, Any]) -> dict[str, Any]:
    """The checked parts of a send body (400 with a path for anything wrong)."""
    reject_unknown(body, SEND_KEYS)
    category = body.get("category", "transactional")
    if category not in CATEGORIES:
        raise ApiError.validation("'category' is 'transactional' or 'marketing'", path=["category"])
    out: dict[str, Any] = {
        "category": category,
        "to": addresses.check_list(body.get("to"), "to", required=True, most=MAX_RECIPIENTS),
        "cc": addresses.check_list(body.get("cc"), "cc", required=False, most=MAX_CC),
        "replyTo": addresses.check_one(body["replyTo"], ["replyTo"]) if body.get("replyTo") is not None else None,
        "variables": catalog.check_variables(body.get("variables")),
    }
    out["sendAt"] = _send_at(body.get("sendAt"))  # -- govern43
    if category == "marketing" and out["cc"]:
        raise ApiError.validation("A marketing send has no 'cc': every recipient gets a message of their own",
                                  path=["cc"])
    has_key, has_inline = body.get("templateKey") is not None, body.get("inline") is not None
    if has_key == has_inline:
        raise ApiError.validation("Give exactly one of 'templateKey' or 'inline'",
                                  path=["templateKey" if has_key else "inline"])
    if has_key:
        if not isinstance(body["templateKey"], str):
            raise ApiError.validation("'templateKey' is a string", path=["templateKey"])
        out["templateKey"] = body["templateKey"]
    else:
        out["inline"] = _inline(body["inline"])
    return out


def _send_at(value: Any) -> dt.datetime | None:
    """-- govern43: ``sendAt``, an ISO 8601 time with a zone, not in the past (None: now)."""
    if value is None:
        return None
    wrong = ApiError.validation("'sendAt' is an ISO 8601 time with a time zone, not in the past", path=["sendAt"])
    if not isinstance(value, str) or len(value) > 40:
        raise wrong
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise wrong from None
    if moment.tzinfo is None or moment < now_utc() - dt.timedelta(minutes=1):
        raise wrong
    return moment.astimezone(dt.UTC)


def personal(message: dict[str, Any], kernel: Any, site_id: str, to: list[str]) -> OutgoingEmail:
    """The OutgoingEmail of a rendered ``message`` for ``to`` (one marketing recipient, or all)."""
    headers: dict[str, str] = {}
    html, text = message["html"], message["text"]
    if message["category"] == "marketing":
        url = unsubscribe_url(kernel, site_id, addresses.bare(to[0]))
        headers = {"List-Unsubscribe": f"<{url}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
        html = html.replace(SENTINEL, render.escape_url(url)) if html else html
        text = text.replace(SENTINEL, url)
    return OutgoingEmail(to=to, cc=message.get("cc") or [], reply_to=message.get("replyTo"),
                         subject=message["subject"], html=html, text=text, headers=headers)


async def _deliver(mailer: Any, email: OutgoingEmail) -> str:
    try:
        return await mailer.send(email)
    except MailerNotConfigured as exc:
        raise not_configured() from exc
    except ValueError as exc:  # everything was checked before; the mailer's own checks agree
        raise ApiError.validation(f"The message cannot be sent: {exc}", path=["body"]) from exc


async def send(ctx: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Send or queue; ``(status, { queued, sent, failed, suppressed, messageIds, batchId })``."""
    mailer = await _gate(ctx)
    parsed = parse_send(body)
    kernel, site_id = ctx.kernel, ctx.require_site()
    variables = dict(parsed["variables"])
    marketing = parsed["category"] == "marketing"
    if marketing:
        variables["unsubscribeUrl"] = SENTINEL
    async with ctx.reader() as db:
        if "templateKey" in parsed:
            row = await catalog.template_by_key(db, parsed["templateKey"])
            layout = await catalog.layout_html(db, row["layout_id"])
            source = (row["subject"], row["html"], row["text"])
        else:
            source, layout = parsed["inline"], None
        rendered = await render.render_message_async(*source, layout, variables)
        recipients = parsed["to"]
        dropped: set[str] = set()
        if marketing:
            dropped = await suppressions.suppressed_among(db, [addresses.bare(t) for t in recipients])
            recipients = [t for t in recipients if addresses.bare(t) not in dropped]
    excluded: set[str] = set()
    if marketing:
        # Members of the site without marketing consent, or who restrict processing (kernel.policy.privacy).
        excluded = await marketing_excluded(kernel, site_id, [addresses.bare(t) for t in recipients])
        recipients = [t for t in recipients if addresses.bare(t).lower() not in excluded]
    message = {"category": parsed["category"], "cc": parsed["cc"], "replyTo": parsed["replyTo"],
               **rendered.as_dict()}
    answer: dict[str, Any] = {"category": parsed["category"], "queued": 0, "sent": 0, "failed": 0,
                              "suppressed": len(dropped), "withoutConsent": len(excluded), "messageIds": [],
                              "batchId": None}
    if not recipients:
        return 200, answer
    # -- govern43: a scheduled send is always a batch, its jobs due at ``sendAt``
    if parsed["sendAt"] is not None or len(recipients) > int(kernel.settings.get("email_queue_threshold") or 0):
        answer["batchId"] = await _queue(ctx, message, recipients, parsed["sendAt"])
        answer["queued"] = len(recipients)
        return 202, answer
    groups = [[r] for r in recipients] if marketing else [recipients]
    for group in groups:
        try:
            answer["messageIds"].append(await _deliver(mailer, personal(message, kernel, site_id, group)))
            answer["sent"] += len(group)
        except DeliveryFailed as exc:
            log.warning("site %s: an email was not delivered: %s", site_id, exc)
            answer["failed"] += len(group)
    if not answer["sent"]:
        raise delivery_failed()
    return 200, answer


async def _queue(ctx: Any, message: dict[str, Any], recipients: list[str], send_at: dt.datetime | None) -> str:
    batch_id = uuid7()
    when = {"run_at": send_at} if send_at is not None else {}
    async with ctx.unit_of_work() as uow:
        await uow.db.insert(batches, {"id": batch_id, "category": message["category"], "message": message,
                                      "total": len(recipients), "created_at": now_utc(), "send_at": send_at,
                                      "subject": (message.get("subject") or "")[:998],
                                      "created_by": ctx.principal.user_id})
        if message["category"] == "marketing":
            for recipient in recipients:
                await uow.enqueue(JOB, site_id=uow.site_id, batch_id=batch_id, to=[recipient], **when)
        else:
            await uow.enqueue(JOB, site_id=uow.site_id, batch_id=batch_id, to=recipients, **when)
    return batch_id


async def _count(kernel: Any, site_id: str, batch_id: str, outcome: str, n: int) -> None:
    """-- govern43: ``n`` recipients of the batch reached ``outcome`` (sent, failed, skipped)."""
    column = batches.c[outcome]
    async with kernel.db.begin() as conn:
        await conn.execute(batches.update().where(batches.c.site_id == site_id, batches.c.id == batch_id)
                           .values({outcome: column + n}))


async def deliver_job(kernel: Any, site_id: str, batch_id: str, to: list[str]) -> None:
    """Job ``email.deliver``: send a stored batch to ``to``; a temporary failure is retried."""
    from kernel.tenancy.scope import SiteDB

    async with kernel.db.engine.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(batches).where(batches.c.id == batch_id))
        if row is None:
            return  # pruned, or the site was deleted
        if row["cancelled_at"] is not None:
            return  # -- more43: cancelled before it started; nothing is sent or counted
        message = dict(row["message"])
        if message["category"] == "marketing":
            # The recipient may have unsubscribed since the batch was queued.
            if await suppressions.suppressed_among(db, [addresses.bare(t) for t in to]):
                return await _count(kernel, site_id, batch_id, "skipped", len(to))
    if message["category"] == "marketing":
        # ... or withdrawn marketing consent, or restricted processing.
        if await marketing_excluded(kernel, site_id, [addresses.bare(t) for t in to]):
            return await _count(kernel, site_id, batch_id, "skipped", len(to))
    try:
        mailer = await smtp_site.mailer_for(kernel, site_id)
        await mailer.send(personal(message, kernel, site_id, to))
    except ApiError as exc:  # the site's SMTP settings do not open or are refused now
        log.warning("site %s: batch %s not sent: %s", site_id, batch_id, exc.message)
    except MailerNotConfigured:
        log.warning("site %s: batch %s not sent: email is not configured", site_id, batch_id)
    except DeliveryFailed as exc:
        if exc.temporary:
            raise
        log.warning("site %s: batch %s refused for a recipient: %s", site_id, batch_id, exc)
    else:
        return await _count(kernel, site_id, batch_id, "sent", len(to))
    await _count(kernel, site_id, batch_id, "failed", len(to))  # -- govern43: its outcome, counted


async def deliver_gave_up(kernel: Any, error: str, site_id: str, batch_id: str, to: list[str]) -> None:
    """-- more43: the job ``email.deliver``'s retries ran out (a temporary failure each time): its
    recipients are counted failed, not left pending."""
    log.warning("site %s: batch %s not sent after its retries: %s", site_id, batch_id, error[:300])
    await _count(kernel, site_id, batch_id, "failed", len(to))


def batch_record(row: Any) -> dict[str, Any]:
    """-- govern43: a batch as ``GET /email/batches`` shows it (never its recipients or text)."""
    done = row["sent"] + row["failed"] + row["skipped"]
    send_at = row["send_at"]
    if send_at is not None and send_at.tzinfo is None:  # SQLite hands back naive UTC
        send_at = send_at.replace(tzinfo=dt.UTC)
    status = "done" if done >= row["total"] else (
        "scheduled" if send_at is not None and send_at > now_utc() and not done else "sending")
    cancelled = row["cancelled_at"] is not None  # -- more43
    return {"id": row["id"], "category": row["category"], "subject": row["subject"], "total": row["total"],
            "sent": row["sent"], "failed": row["failed"], "skipped": row["skipped"],
            "pending": 0 if cancelled else max(0, row["total"] - done), "status": "cancelled" if cancelled else status,
            "sendAt": iso(row["send_at"]), "cancelledAt": iso(row["cancelled_at"]),
            "createdBy": row["created_by"], "createdAt": iso(row["created_at"])}


async def cancel_batch(ctx: Any, batch_id: str) -> dict[str, Any]:
    """-- more43: ``POST /email/batches/:id/cancel``: a scheduled send, before it starts (its
    ``sendAt`` still ahead, nothing sent), is cancelled: its jobs end at their time without
    sending. 409 ``BATCH_STARTED`` once it started (or was never scheduled), 409 ``CONFLICT``
    when cancelled already; 404 for another site's."""
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await db.one(db.select(batches).where(batches.c.id == batch_id[:64]))
        if row is None:
            raise ApiError.not_found(f"No email batch '{batch_id[:64]}'")
        if row["cancelled_at"] is not None:
            raise ApiError(409, "CONFLICT", "The send was cancelled already")
        claimed = await db.execute(db.update(batches).where(
            batches.c.id == row["id"], batches.c.cancelled_at.is_(None), batches.c.send_at.is_not(None),
            batches.c.send_at > now, batches.c.sent + batches.c.failed + batches.c.skipped == 0)
            .values(cancelled_at=now))
        if claimed.rowcount != 1:
            raise ApiError(409, "BATCH_STARTED", "The send has started (or was not scheduled): it can no longer be "
                           "cancelled")
        row = await db.one(db.select(batches).where(batches.c.id == row["id"]))
    return batch_record(row)


async def list_batches(ctx: Any, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        total = await db.scalar(db.select(batches, func.count()))
        rows = await db.all(db.select(batches).order_by(batches.c.created_at.desc(), batches.c.id.desc())
                            .limit(limit).offset(offset))
    return [batch_record(r) for r in rows], int(total or 0)


async def get_batch(ctx: Any, batch_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        row = await db.one(db.select(batches).where(batches.c.id == batch_id[:64]))
    if row is None:
        raise ApiError.not_found(f"No email batch '{batch_id[:64]}'")
    return batch_record(row)


async def prune_job(kernel: Any) -> None:
    """Daily: drop batches older than a week (their jobs are long done or dead)."""
    cutoff = now_utc() - dt.timedelta(days=BATCH_DAYS)
    async with kernel.db.begin() as conn:
        await conn.execute(batches.delete().where(batches.c.created_at < cutoff))


async def send_test(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /email/test { to }``: one plain message to one address."""
    mailer = await _gate(ctx)
    reject_unknown(body, {"to"})
    to = addresses.check_one(body.get("to"), ["to"])
    site = await get_site_cached(ctx.kernel, ctx.require_site()) or {}
    name = " ".join(str(site.get("name") or ctx.site_id).split())[:80]
    email = OutgoingEmail(to=[to], subject=f"Test email from {name}", text=(
        f"This is a test email from {name}.\nIf you can read it, email is configured correctly.\n"))
    try:
        message_id = await _deliver(mailer, email)
    except DeliveryFailed as exc:
        log.warning("site %s: test email not delivered: %s", ctx.site_id, exc)
        raise delivery_failed() from exc
    return {"sent": 1, "messageId": message_id}


async def capabilities(kernel: Any, site_id: str) -> dict[str, Any]:
    mailer = await smtp_site.mailer_for(kernel, site_id)
    return {
        "configured": bool(mailer.configured),
        "transport": "smtp" if mailer.configured else None,
        "siteSmtp": mailer is not kernel.mailer,
        "defaultFrom": mailer.default_sender if mailer.configured else None,
        "oneClickUnsubscribe": True,
        "queueThreshold": int(kernel.settings.get("email_queue_threshold") or 0),
        "maxRecipients": MAX_RECIPIENTS,
    }


def _addresses_in(item: dict[str, Any]) -> set[str]:
    """The lower-cased addresses among an item's top-level string values (and lists of them)."""
    found: set[str] = set()
    for value in item.values():
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, str) and "@" in one and len(one) <= 320:
                address = addresses.bare(one)
                if "@" in address:
                    found.add(address)
    return found


async def forget_erased_addresses(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``items.delete``: when the delete is an erasure (cause ``erasure:<id>``, the
    privacy plugin), the addresses the erased item held leave the queued ``email.deliver`` jobs
    of the site (pending or failed), in the erasure's transaction: a job to them alone is
    deleted, a shared one loses them. Suppressions are kept (they record an objection)."""
    if not isinstance(payload, dict) or ctx.uow is None or ctx.site_id is None:
        return
    if not str(payload.get("causedBy") or "").startswith("erasure:") or not isinstance(payload.get("before"), dict):
        return
    erased = _addresses_in(payload["before"])
    if not erased:
        return

    def without(args: dict[str, Any]) -> dict[str, Any] | None:
        to = [t for t in args.get("to") or [] if isinstance(t, str)]
        left = [t for t in to if addresses.bare(t) not in erased]
        if len(left) == len(to):
            return args
        return {**args, "to": left} if left else None

    await ctx.kernel.jobs.rewrite_waiting(JOB, site_id=ctx.site_id, rewrite=without, uow=ctx.uow)
