"""Approvals of dangerous skill calls (docs/ai.md, What it does).

``pending`` → ``approved`` (the action then runs once, as the requester *now*: read again with
``accounts.api.principal_current``, so a suspended user, a revoked session or a lost
permission runs nothing: the approval ends ``failed`` with the error) or ``rejected``. A
pending approval older than ``SVC_AI_APPROVAL_TTL_HOURS`` is ``expired`` and can no longer be
decided. Deciding claims the row with one conditional UPDATE (``status = 'pending'``), so of two
concurrent decisions exactly one wins; the other answers 409 ``CONFLICT``.

Who may decide: a site admin, or a user (or a user holding a role) named in the site setting
``ai.approvers`` (a list of user and role ids); in both cases only if that approver holds the
skill's capability too. A named approver (not an admin, who could act directly) never approves
their own request (403 ``PERMISSION_DENIED``, ``reason: self_approval``); they may reject it. Requesting, approving and rejecting are audited
(``ai.approval.request|approve|reject``).

A new request notifies its approvers, one by one (``realtime.notify_each``: the ``notification``
frame on their own sessions and a web push to their own subscriptions, kind
``ai.approval.requested``): the members named in ``ai.approvers`` (by user id, or holding a
named role), or, when it names none, the site's admins. Nobody else's session hears of it. An approved call that fails *transiently* (an
``ApiError`` 429, 502, 503 or 504, a network or OS error) is ``retrying``: the job
``ai.approval_retry`` runs it again after a backoff (``SVC_AI_APPROVAL_RETRY_SECONDS``, doubled
each time) with the same idempotency key ``ai-approval:<id>`` (``SkillContext.idempotency_key``),
up to ``SVC_AI_APPROVAL_ATTEMPTS`` runs in all; then it ends ``failed`` (and its requester and
decider are told).
``attempts`` counts the runs; ``result`` or ``error`` is the outcome. When an approval reaches
its final state (``approved``, ``rejected``, ``failed``) the bus filter ``ai.approval.decided``
(``{ approvalId, skill, status, result, error }``) runs in that transaction: the agents plugin
resumes the goal that waited on it.

Every decision, by whichever route, runs the bus filter ``ai.approval.decide``
(``{ approvalId, skill, decision }``) in the transaction that claims the row: a veto leaves the
approval pending and nothing runs (the agents plugin refuses approving what a frozen goal
requested, 409 ``AGENT_FROZEN``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import aware, iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api
from plugins.accounts import api as accounts_api
from plugins.ai import gate
from plugins.ai.chat import conversations
from plugins.ai.skill import SkillContext
from plugins.ai.tables import approvals
from plugins.realtime import api as realtime_api
from plugins.settings import api as settings_api

DECISIONS = ("approved", "rejected")
DECIDE_EVENT = "ai.approval.decide"
DECIDED_EVENT = "ai.approval.decided"
APPROVERS_KEY = "ai.approvers"
RETRY_JOB = "ai.approval_retry"
TRANSIENT_STATUSES = (429, 502, 503, 504)


def idempotency_key(approval_id: str) -> str:
    return f"ai-approval:{approval_id}"


def check_approvers(value: Any) -> list[str]:
    """The ``ai.approvers`` setting: up to 100 user or role ids."""
    if not isinstance(value, list) or len(value) > 100 or not all(
            isinstance(v, str) and 0 < len(v) <= 64 for v in value):
        raise ValueError("ai.approvers is a list of at most 100 user or role ids")
    return list(dict.fromkeys(value))


def record(row: Any) -> dict[str, Any]:
    status = row["status"]
    if status == "pending" and aware(row["expires_at"]) <= now_utc():
        status = "expired"
    requester = row["requester"] or {}
    return {"id": row["id"], "status": status, "skill": row["skill"], "arguments": row["arguments"],
            "message": row["summary"], "conversationId": row["conversation_id"],
            "requestedBy": requester.get("userId") or requester.get("apiKeyId"),
            "decidedBy": row["decided_by"], "result": row["result"], "error": row["error"],
            "attempts": row["attempts"], "idempotencyKey": idempotency_key(row["id"]),
            "createdAt": iso(row["created_at"]), "expiresAt": iso(row["expires_at"]),
            "decidedAt": iso(row["decided_at"])}


async def approver_ids(kernel: Any, site_id: str) -> list[str]:
    """Who is told of a new request: the members ``ai.approvers`` names (by user or role id), or
    the site's admins when it names none (admins may always decide)."""
    named = await settings_api.get_setting(kernel, site_id, APPROVERS_KEY, [])
    async with kernel.db.connect() as conn:
        people = await accounts_api.active_users(conn, await access_api.members_named(conn, site_id, list(named or [])))
        return people or await accounts_api.site_admins(conn, site_id)


def _user_of(owner: Any) -> list[str]:
    """The user id of an ``owner_of`` string (``user:<id>``); none for an API key."""
    return [owner[5:]] if isinstance(owner, str) and owner.startswith("user:") and len(owner) > 5 else []


async def request(ctx: SkillContext, skill: Any, args: dict[str, Any], conversation_id: str | None) -> dict[str, Any]:
    """A pending approval of ``skill(args)`` requested by ``ctx.principal``; nothing runs."""
    approvers = await approver_ids(ctx.kernel, ctx.site_id)
    now = now_utc()
    row = {"id": uuid7(), "conversation_id": conversation_id,
           "requester": accounts_api.principal_record(ctx.principal), "requester_owner": gate.owner_of(ctx.principal),
           "skill": skill.name, "arguments": args, "summary": skill.describe(args), "status": "pending",
           "result": None, "error": None, "decided_by": None, "created_at": now,
           "expires_at": now + dt.timedelta(hours=float(ctx.kernel.settings.get("ai_approval_ttl_hours"))),
           "decided_at": None, "attempts": 0}
    async with ctx.kernel.unit_of_work(ctx.site_id, ctx.principal, ctx.request_id) as uow:
        await uow.db.insert(approvals, row)
        await audit.record(uow.conn, action="ai.approval.request", site_id=ctx.site_id, principal=ctx.principal,
                           target_type="ai_approval", target_id=row["id"], request_id=ctx.request_id,
                           details={"skill": skill.name})
        # Each approver is told (their frame and web push go out after commit).
        await realtime_api.notify_each(
            ctx.kernel, ctx.site_id, approvers, kind="ai.approval.requested", severity="warning",
            title=f"Approval needed: {row['summary']}"[:200],
            body=f"Requested by {row['requester_owner']}; decide before {iso(row['expires_at'])}",
            deep_link=f"/ai/approvals/{row['id']}", entity_id=row["id"], uow=uow)
    return record({**row, "site_id": ctx.site_id})


async def _load(kernel: Any, site_id: str, approval_id: Any) -> Any:
    if not isinstance(approval_id, str) or len(approval_id) > 36 or "\x00" in approval_id:  # PG refuses NUL
        raise ApiError.not_found("Approval not found")
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(approvals).where(approvals.c.id == approval_id))
    if row is None:
        raise ApiError.not_found("Approval not found")
    return row


async def is_approver(ctx: SkillContext) -> bool:
    """A site admin, or named (by user or role id) in the ``ai.approvers`` setting."""
    principal = ctx.principal
    if principal.is_admin:
        return True
    if principal.kind != "user":
        return False
    named = await settings_api.get_setting(ctx.kernel, ctx.site_id, APPROVERS_KEY, [])
    return principal.user_id in named or (principal.role_id is not None and principal.role_id in named)


async def list_visible(ctx: SkillContext, status: str | None, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Approvals of the site: all of them for an approver, else the caller's own requests.
    Default ``status``: ``pending`` (not expired)."""
    from sqlalchemy import func

    wanted = status or "pending"
    async with ctx.kernel.db.connect() as conn:
        db = SiteDB(ctx.site_id, conn)
        stmt = db.select(approvals)
        count = db.select(approvals, func.count())
        conds = []
        now = now_utc()
        if wanted == "pending":
            conds += [approvals.c.status == "pending", approvals.c.expires_at > now]
        elif wanted == "expired":
            conds += [approvals.c.status == "pending", approvals.c.expires_at <= now]
        elif wanted != "all":
            conds.append(approvals.c.status == wanted)
        if not await is_approver(ctx):
            conds.append(approvals.c.requester_owner == gate.owner_of(ctx.principal))
        total = await db.scalar(count.where(*conds))
        rows = await db.all(stmt.where(*conds).order_by(approvals.c.created_at.desc(), approvals.c.id.desc())
                            .limit(limit).offset(offset))
    return [record(r) for r in rows], int(total or 0)


async def _requester_now(kernel: Any, site_id: str, requester: Any) -> Any:
    principal = await accounts_api.principal_current(kernel, site_id, requester) if isinstance(requester, dict) \
        else None
    return None if principal is None else await kernel.access.resolve(principal, site_id)


async def _finish(kernel: Any, site_id: str, row: Any, *, status: str, result: Any = None,
                  error: Any = None, attempts: int | None = None, decider: str | None = None) -> None:
    """Write the approval's outcome; a final one runs the ``ai.approval.decided`` filter in the
    same transaction, a ``failed`` one after retries tells the studio."""
    values: dict[str, Any] = {"status": status, "result": result, "error": error}
    if attempts is not None:
        values["attempts"] = attempts
    async with kernel.unit_of_work(site_id) as uow:
        await uow.db.execute(uow.db.update(approvals).where(approvals.c.id == row["id"]).values(**values))
        told: list[str] = []
        if status == "failed" and (attempts or 0) > 1:
            told = _user_of(row["requester_owner"]) + _user_of(row["decided_by"])
        if status != "retrying":
            await _decided(uow, row, status, result, error)
            await _tell_decided(kernel, uow, site_id, row, status, skip=told + _user_of(decider or row["decided_by"]))
        if told:
            # Its requester and whoever approved it are told.
            await realtime_api.notify_each(
                kernel, site_id, _user_of(row["requester_owner"]) + _user_of(row["decided_by"]),
                kind="ai.approval.failed", severity="error",
                title=f"Approved action failed after {attempts} attempts: {row['summary']}"[:200],
                deep_link=f"/ai/approvals/{row['id']}", entity_id=row["id"], uow=uow)


async def _tell_decided(kernel: Any, uow: Any, site_id: str, row: Any, status: str, skip: list[str]) -> None:
    """-- more43: an approval reached its final state: its requester and the site's approvers
    (``approver_ids``) are told, kind ``ai.approval.decided`` (the studio's open inboxes redraw on
    it), except ``skip`` (the decider, who saw it, and whoever the failure notice told)."""
    recipients = [u for u in dict.fromkeys(_user_of(row["requester_owner"]) + await approver_ids(kernel, site_id))
                  if u not in skip]
    await realtime_api.notify_each(
        kernel, site_id, recipients, kind="ai.approval.decided", severity="error" if status == "failed" else "info",
        title=f"Approval {status}: {row['summary']}"[:200], deep_link=f"/ai/approvals/{row['id']}",
        entity_id=row["id"], uow=uow)


async def _decided(uow: Any, row: Any, status: str, result: Any, error: Any) -> None:
    await uow.filter(DECIDED_EVENT, {"approvalId": row["id"], "skill": row["skill"], "status": status,
                                     "result": result, "error": error})


async def decide(ctx: SkillContext, approval_id: str, body: dict[str, Any], *,
                 approver_checked: bool = False) -> dict[str, Any]:
    """``POST /ai/approvals/:id/decide { decision }``: see the module docstring.
    ``approver_checked``: the caller authorised the decider itself (agent review)."""
    reject_unknown(body, {"decision"})
    decision = body.get("decision")
    if decision not in DECISIONS:
        raise ApiError.validation("'decision' is 'approved' or 'rejected'", path=["decision"])
    row = await _load(ctx.kernel, ctx.site_id, approval_id)
    skill = gate.find(ctx.kernel, row["skill"], ["skill"])
    if not (approver_checked or await is_approver(ctx)) or not await gate.permitted(ctx, skill, row["arguments"]):
        raise ApiError.forbidden("Deciding this approval needs a site admin or a named approver holding the "
                                 f"capability '{skill.capability}'")
    if decision == "approved" and not ctx.principal.is_admin and row["requester_owner"] == gate.owner_of(ctx.principal):
        # Four eyes: a named approver's own request needs another approver (an admin could act directly).
        raise ApiError.forbidden("A request is approved by another approver than its requester",
                                 reason="self_approval")
    now = now_utc()
    async with ctx.kernel.unit_of_work(ctx.site_id, ctx.principal, ctx.request_id) as uow:
        claimed = await uow.db.execute(uow.db.update(approvals).where(
            approvals.c.id == row["id"], approvals.c.status == "pending", approvals.c.expires_at > now)
            .values(status=decision, decided_by=gate.owner_of(ctx.principal), decided_at=now))
        if claimed.rowcount != 1:
            raise ApiError(409, "CONFLICT", f"The approval is {record(row)['status']}, no longer pending"
                           if row["status"] != "pending" or aware(row["expires_at"]) <= now
                           else "The approval was decided meanwhile")
        await uow.filter(DECIDE_EVENT, {"approvalId": row["id"], "skill": skill.name, "decision": decision})
        if decision == "rejected":
            await _decided(uow, row, "rejected", None, None)
            await _tell_decided(ctx.kernel, uow, ctx.site_id, row, "rejected", skip=_user_of(gate.owner_of(ctx.principal)))
        await audit.record(uow.conn, action="ai.approval.approve" if decision == "approved" else "ai.approval.reject",
                           site_id=ctx.site_id, principal=ctx.principal, target_type="ai_approval",
                           target_id=row["id"], request_id=ctx.request_id, details={"skill": skill.name})
    if decision == "approved":
        await _run(ctx, row, skill)
    return record(await _load(ctx.kernel, ctx.site_id, row["id"]))


def transient(exc: BaseException) -> bool:
    """A failure worth another run: the service or a dependency was busy or unreachable."""
    import httpx

    if isinstance(exc, ApiError):
        return exc.status in TRANSIENT_STATUSES
    return isinstance(exc, (OSError, TimeoutError, httpx.TransportError))


async def _run(ctx: SkillContext, row: Any, skill: Any) -> None:
    """Run the approved call, as the requester now (its first run, or a retry)."""
    import httpx

    kernel, site_id = ctx.kernel, ctx.site_id
    attempts = int(row["attempts"] or 0) + 1
    decider = row["decided_by"] or (gate.owner_of(ctx.principal) if ctx.principal is not None else None)
    requester = await _requester_now(kernel, site_id, row["requester"])
    actor = SkillContext(kernel, site_id, requester, ctx.request_id, cause=f"ai-approval:{row['id']}",
                         idempotency_key=idempotency_key(row["id"])) if requester is not None else None
    if actor is None or not await gate.permitted(actor, skill, row["arguments"]):
        error = {"code": "SKILL_DENIED", "message": "The requester no longer holds the skill's capability"}
        await _finish(kernel, site_id, row, status="failed", error=error, attempts=attempts, decider=decider)
        return
    try:
        result = await gate.run(skill, actor, row["arguments"])
    except (ApiError, OSError, TimeoutError, httpx.TransportError) as exc:
        error = {"code": exc.code, "message": exc.message} if isinstance(exc, ApiError) else \
            {"code": "UNAVAILABLE", "message": f"{type(exc).__name__}: {exc}"[:300]}
        limit = int(kernel.settings.get("ai_approval_attempts"))
        if transient(exc) and attempts < limit:
            delay = float(kernel.settings.get("ai_approval_retry_seconds")) * 2 ** (attempts - 1)
            await _finish(kernel, site_id, row, status="retrying", error=error, attempts=attempts, decider=decider)
            await kernel.jobs.enqueue(RETRY_JOB, site_id=site_id, approval_id=row["id"], delay=delay,
                                      dedupe_key=idempotency_key(row["id"]))
            return
        await _finish(kernel, site_id, row, status="failed", error=error, attempts=attempts, decider=decider)
        outcome: dict[str, Any] = {"result": {"error": error}}
    else:
        await _finish(kernel, site_id, row, status="approved", result=result, attempts=attempts, decider=decider)
        outcome = {"result": result}
    if row["conversation_id"]:
        await conversations.append(kernel, site_id, row["conversation_id"], "tool", skill=skill.name,
                                   arguments=row["arguments"], approval_id=row["id"], **outcome)


async def retry_job(kernel: Any, site_id: str, approval_id: str) -> None:
    """The job ``ai.approval_retry``: run a ``retrying`` approval's call again. A ``running`` one is
    taken too: only the jobs system runs this job again while it is ``running``, after the worker
    that ran it died (its lease ran out), and the call then goes out again with the same
    idempotency key."""
    async with kernel.unit_of_work(site_id) as uow:
        claimed = await uow.db.execute(uow.db.update(approvals).where(
            approvals.c.id == approval_id, approvals.c.status.in_(("retrying", "running"))).values(status="running"))
        if claimed.rowcount != 1:
            return
        row = await uow.db.one(uow.db.select(approvals).where(approvals.c.id == approval_id))
    try:
        skill = gate.find(kernel, row["skill"], ["skill"])
    except ApiError as exc:  # its extension was unloaded meanwhile
        await _finish(kernel, site_id, row, status="failed", error={"code": exc.code, "message": exc.message},
                      attempts=int(row["attempts"] or 0))
        return
    await _run(SkillContext(kernel, site_id, None, f"ai-retry-{approval_id[:24]}"), row, skill)
