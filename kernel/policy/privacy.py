"""Consent, restriction and retention as every plugin reads them, whether or not a privacy
plugin is installed.

A plugin that must respect a user's consent or restriction (pageviews for analytics, email for
marketing, a future agents plugin for automated processing) calls these helpers; they ask the
hooks ``consent_state``, ``processing_restricted`` and ``marketing_excluded`` (implemented by
the privacy plugin) and apply a documented default when no plugin answers:

- ``consent_granted(...)`` answers ``None`` without a consent store, so each caller keeps its
  behaviour from before (pageviews: not attributed; email: sent, the unsubscribe link governs);
- ``restricted(...)`` answers ``False`` without one (nothing is restricted);
- ``marketing_excluded(...)`` answers an empty set without one.

``RetentionTarget`` is what ``register_retention_targets`` returns: each owning plugin prunes its
own tables. ``ErasureTarget`` is what ``register_erasure_targets`` returns: each owning plugin
erases what its own tables keep of an erased subject (``Subject``), with ``erase_rows`` and
``holding`` for the usual "delete the site's rows quoting one of the values".
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Text, cast, delete, false, or_, select

from kernel.events.tables import checkpoints, events
from kernel.hooks.hookspecs import hookimpl
from kernel.hooks.plugins import call_all, call_first
from kernel.jobs.tables import jobs
from kernel.policy.audit import audit_log
from kernel.policy.audit import prune_site as prune_audit
from kernel.tenancy.scope import SiteDB

name = "kernel.policy.privacy"

CONSENT_TYPES = ("marketing", "analytics", "personalization", "functional", "sale_share")

Prune = Callable[[Any, str, dt.datetime], Awaitable[int]]
# ``pending(kernel, before, site_ids)``: the sites (of ``site_ids``, else of every site) that hold
# a record ``prune`` would delete at ``before``.
Pending = Callable[[Any, dt.datetime, Sequence[str] | None], Awaitable[set[str]]]

# How many site ids one ``IN (...)`` of a cross-site query names.
SITE_CHUNK = 500


@dataclass(frozen=True)
class RetentionTarget:
    """A kind of record a plugin keeps for a limited time: ``prune(kernel, site_id, before)``
    deletes the site's records older than ``before`` and returns how many it deleted.

    ``pending(kernel, before, site_ids)`` answers, in a query or two across sites, which sites
    hold something to prune (``rows_before(table, column)`` makes one), so the daily run visits
    only those. A target without it is pruned in every site, one by one."""

    name: str
    default_days: int
    prune: Prune
    doc: str = ""
    pending: Pending | None = None


async def prune_rows(kernel: Any, site_id: str, table: Any, *where: Any, chunk: int = 500) -> int:
    """Delete the site's rows of ``table`` (which has an ``id`` column) matching ``where``, in
    transactions of at most ``chunk`` rows so a long backlog never holds a lock for long;
    returns how many went. For ``RetentionTarget.prune`` functions."""
    total = 0
    while True:
        async with kernel.db.begin() as conn:
            db = SiteDB(site_id, conn)
            ids = [r["id"] for r in await db.all(db.select(table, table.c.id).where(*where).limit(chunk))]
            if ids:
                await db.execute(db.delete(table).where(table.c.id.in_(ids)))
        total += len(ids)
        if len(ids) < chunk:
            return total


async def delete_in_batches(kernel: Any, table: Any, *where: Any, chunk: int = 500,
                            before_delete: Callable[[Any, list[Any]], Awaitable[None]] | None = None) -> int:
    """Delete the rows of ``table`` (which has an ``id`` column) matching ``where`` across every
    site, in transactions of at most ``chunk`` rows, so an instance-wide job never holds one
    long lock nor deletes millions of rows in one statement; returns how many went.
    ``before_delete(conn, ids)`` runs in each batch's transaction first (dependent rows)."""
    total = 0
    while True:
        async with kernel.db.begin() as conn:
            ids = list((await conn.execute(select(table.c.id).where(*where).limit(chunk))).scalars())
            if ids:
                if before_delete is not None:
                    await before_delete(conn, ids)
                await conn.execute(delete(table).where(table.c.id.in_(ids)))
        total += len(ids)
        if len(ids) < chunk:
            return total


async def sites_holding(kernel: Any, table: Any, *where: Any, site_ids: Sequence[str] | None = None) -> set[str]:
    """The sites (of ``site_ids``, else every site) with a row of ``table`` matching ``where``:
    one query across sites (one per ``SITE_CHUNK`` of ``site_ids``), so that a maintenance job
    visits the sites that have something for it and costs nothing per idle site."""
    base = select(table.c.site_id).where(table.c.site_id.is_not(None), *where).distinct()
    found: set[str] = set()
    async with kernel.db.connect() as conn:
        if site_ids is None:
            found.update((await conn.execute(base)).scalars())
        else:
            ids = list(site_ids)
            for start in range(0, len(ids), SITE_CHUNK):
                chunk = ids[start:start + SITE_CHUNK]
                found.update((await conn.execute(base.where(table.c.site_id.in_(chunk)))).scalars())
        await conn.rollback()
    return found


def rows_before(table: Any, column: Any, *where: Any) -> Pending:
    """``RetentionTarget.pending`` for a target that prunes the rows of ``table`` whose
    ``column`` is before the horizon (and that match ``where``)."""
    async def pending(kernel: Any, before: dt.datetime, site_ids: Sequence[str] | None = None) -> set[str]:
        return await sites_holding(kernel, table, column < before, *where, site_ids=site_ids)
    return pending


async def consent_granted(kernel: Any, site_id: str, user_id: str | None, kind: str) -> bool | None:
    """``True``/``False`` from the consent store; ``None`` when no plugin keeps consent (or for
    no user)."""
    if kind not in CONSENT_TYPES:
        raise ValueError(f"unknown consent type {kind!r}")
    if not user_id:
        return None
    hook = getattr(kernel.pm.hook, "consent_state", None)  # published by the privacy plugin
    if hook is None:
        return None
    return await call_first(hook, kernel=kernel, site_id=site_id, user_id=user_id, kind=kind)


async def restricted(kernel: Any, site_id: str, user_id: str | None) -> bool:
    """Whether the user restricted processing of their data in the site (``False`` when no plugin
    keeps restrictions, or for no user)."""
    hook = getattr(kernel.pm.hook, "processing_restricted", None)  # published by the privacy plugin
    if not user_id or hook is None:
        return False
    return bool(await call_first(hook, kernel=kernel, site_id=site_id, user_id=user_id))


async def marketing_excluded(kernel: Any, site_id: str, emails: list[str]) -> set[str]:
    """The lower-cased addresses of ``emails`` that must get no marketing mail (empty when no
    plugin keeps consent)."""
    hook = getattr(kernel.pm.hook, "marketing_excluded", None)  # published by the privacy plugin
    if not emails or hook is None:
        return set()
    found = await call_first(hook, kernel=kernel, site_id=site_id, emails=list(emails))
    return {e.lower() for e in found} if found else set()


async def personal_data_sections(kernel: Any, site_id: str, user_id: str) -> dict[str, Any]:
    """The sections every plugin contributes to a user's data export (``export_personal_data``)."""
    out: dict[str, Any] = {}
    for part in await call_all(kernel.pm.hook.export_personal_data, kernel=kernel, site_id=site_id, user_id=user_id):
        if isinstance(part, dict):
            out.update(part)
    return out


def _declared(groups: Any, kind: type, hook: str) -> dict[str, Any]:
    """The targets of every plugin's answer to ``hook``, by name; a name declared twice, or an
    answer not of ``kind``, is an error."""
    out: dict[str, Any] = {}
    for group in groups:
        for target in group or []:
            if not isinstance(target, kind):
                raise TypeError(f"{hook} returned {target!r}, not a {kind.__name__}")
            if target.name in out:
                raise ValueError(f"{hook}: target {target.name!r} is declared twice")
            out[target.name] = target
    return out


def retention_targets(kernel: Any) -> dict[str, RetentionTarget]:
    """Every target the enabled plugins declare, by name; a name declared twice is an error."""
    return _declared(kernel.pm.hook.register_retention_targets(kernel=kernel), RetentionTarget,
                     "register_retention_targets")


# ---------------------------------------------------------------------- erasure

# A value shorter than this is no term of an erasure: it would match far too much ("Ann", "yes").
MIN_TERM = 6
MAX_TERMS = 200


@dataclass(frozen=True)
class Subject:
    """Whom an erasure erases in ``site_id``: ``terms``, the text values the erased items held
    that no other item of their collection holds; ``user_ids``, the site's accounts whose email
    address is one of the terms; ``cause``, ``erasure:<request id>``."""

    site_id: str
    terms: tuple[str, ...]
    user_ids: tuple[str, ...]
    cause: str

    @property
    def owners(self) -> list[str]:
        """The accounts as an ``owner`` column names them (``user:<id>``)."""
        return [f"user:{uid}" for uid in self.user_ids]


ErasureFn = Callable[[Any, Subject], Awaitable[int]]


@dataclass(frozen=True)
class ErasureTarget:
    """A kind of record a plugin keeps that may hold a person's values outside items:
    ``erase(uow, subject)`` deletes (or rewrites) the site's records holding one of the
    subject's terms or belonging to one of their accounts, inside the erasure's transaction
    ``uow``, and returns how many it reached. Targets run by ``order``, then name: the one that
    deletes identities (``accounts``) runs last, after the records naming them."""

    name: str
    erase: ErasureFn
    doc: str = ""
    order: int = 0


def term_forms(terms: Sequence[str]) -> list[str]:
    """Each term as stored in a text column and inside a JSON document (escaped quotes,
    backslashes and, as Python's ``json`` writes them, non-ASCII characters)."""
    import json

    out: list[str] = []
    for term in terms:
        for form in (term, json.dumps(term)[1:-1], json.dumps(term, ensure_ascii=False)[1:-1]):
            if form not in out:
                out.append(form)
    return out


def holding(columns: Sequence[Any], subject: Subject) -> Any:
    """A condition: one of ``columns`` (text or JSON, read as text) contains one of the
    subject's terms, ignoring case."""
    forms = term_forms(subject.terms)
    if not forms or not columns:
        return false()
    return or_(*(cast(col, Text).icontains(form, autoescape=True) for col in columns for form in forms))


async def erase_rows(uow: Any, table: Any, columns: Sequence[Any], subject: Subject, *,
                     user_column: Any = None, owner_column: Any = None, where: Sequence[Any] = ()) -> int:
    """Delete the site's rows of ``table`` whose ``columns`` hold one of the subject's terms (or
    whose ``user_column`` names one of their accounts, or ``owner_column`` one as ``user:<id>``),
    matching ``where``; how many went."""
    cond = holding(columns, subject)
    if user_column is not None and subject.user_ids:
        cond = or_(cond, user_column.in_(list(subject.user_ids)))
    if owner_column is not None and subject.user_ids:
        cond = or_(cond, owner_column.in_(subject.owners))
    return int((await uow.db.execute(uow.db.delete(table).where(cond, *where))).rowcount or 0)


def rows_target(name: str, table: Any, columns: Sequence[Any], doc: str, *, user_column: Any = None,
                owner_column: Any = None) -> ErasureTarget:
    """An ``ErasureTarget`` deleting the site's rows of ``table`` whose ``columns`` hold one of
    the subject's terms, whose ``user_column`` is one of their account ids, or whose
    ``owner_column`` is one of them as ``user:<id>``."""
    async def erase(uow: Any, subject: Subject) -> int:
        return await erase_rows(uow, table, columns, subject, user_column=user_column, owner_column=owner_column)
    return ErasureTarget(name, erase, doc)


def erasure_targets(kernel: Any) -> dict[str, ErasureTarget]:
    """Every erasure target the enabled plugins declare, by name; a name declared twice is an error."""
    return _declared(kernel.pm.hook.register_erasure_targets(kernel=kernel), ErasureTarget,
                     "register_erasure_targets")


async def _erase_audit(uow: Any, subject: Subject) -> int:
    # The trail keeps its rows (who did what, when); a record quoting the subject loses the quote,
    # and the records of the subject's own acts lose the address they came from.
    result = await uow.db.execute(uow.db.update(audit_log).where(
        holding([audit_log.c.details, audit_log.c.target_id], subject)).values(details={"erased": True},
                                                                                 target_id=None))
    reached = int(result.rowcount or 0)
    if subject.user_ids:
        result = await uow.db.execute(uow.db.update(audit_log).where(
            audit_log.c.actor_id.in_(list(subject.user_ids)), audit_log.c.ip.is_not(None)).values(ip=None))
        reached += int(result.rowcount or 0)
    return reached


async def _erase_jobs(uow: Any, subject: Subject) -> int:
    # A job a worker holds now cannot be taken from it; waiting and failed ones go.
    return await erase_rows(uow, jobs, [jobs.c.args, jobs.c.last_error, jobs.c.dedupe], subject,
                            where=[jobs.c.status != "running"])


async def _erase_events(uow: Any, subject: Subject) -> int:
    # Item events are thin (ids and field names); an event naming a value (an email as its
    # target) goes from the log, as retention would take it. A consumer's last error (a target's
    # answer quoting a document) is cleared; its position and retry state stay.
    reached = await erase_rows(uow, events, [events.c.item_id, events.c.fields, events.c.cause], subject)
    done = await uow.db.execute(uow.db.update(checkpoints).where(
        holding([checkpoints.c.last_error], subject)).values(last_error=None))
    return reached + int(done.rowcount or 0)


@hookimpl
def register_erasure_targets(kernel: Any) -> list[ErasureTarget]:
    """The kernel's own: the audit trail (rewritten), the job queue and the event log."""
    return [ErasureTarget("audit", _erase_audit, "Audit records quoting the subject keep their row, lose the "
                          "details; the subject's own acts lose their IP address."),
            ErasureTarget("jobs", _erase_jobs, "Queued and failed jobs whose arguments or error hold the subject."),
            ErasureTarget("events", _erase_events, "Event log entries naming a value of the subject; consumers' "
                          "last errors quoting one.")]


@hookimpl
def register_retention_targets(kernel: Any) -> list[RetentionTarget]:
    """The kernel's own target: ``audit`` (the site's audit records)."""
    return [RetentionTarget("audit", 365, prune_audit, "Audit records of the site, by time.",
                            pending=rows_before(audit_log, audit_log.c.created_at))]


# ---------------------------------------------------------------------- masked reads

_MASKED_READS: ContextVar[str | None] = ContextVar("svc_masked_reads", default=None)


@contextlib.contextmanager
def masked_reads(consumer: str) -> Iterator[None]:
    """Run the block for ``consumer``, a reader that must never hold a protected value in clear
    (the AI copilot and MCP tools: their results go to a model provider and into stored
    conversations, which no erasure crypto-shreds). A plugin that decrypts (regulated content)
    answers its values masked inside the block, whatever the principal may read elsewhere."""
    token = _MASKED_READS.set(consumer)
    try:
        yield
    finally:
        _MASKED_READS.reset(token)


def reads_masked() -> str | None:
    """The consumer of ``masked_reads`` running now, or None."""
    return _MASKED_READS.get()
