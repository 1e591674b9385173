"""Field grants paired with their rule's condition, and the check every item write passes.

A permission ``Decision`` holds the rules' (fields, condition) pairs (``Decision.pairs()``).
When there is one pair (one rule, or rules with the same fields) the fields are the same on
every row the row filter lets through, and nothing here costs anything. When there are more,
a field is granted on a row only by a pair whose own condition matches that row: the pairs'
conditions are evaluated **in SQL**, as 0/1 columns beside the row (``grant_columns``), so they
mean exactly what the row filter means (relations, JSON paths, ``$CURRENT_USER``, ``$NOW``).

Writes: ``WriteGuard`` is handed to ``writes.insert_drafts`` and ``writes.update_row`` by every
caller that acts on a caller's permission (``write.path``, ``dependents``; revert and promote go
through ``write.path``). It reads the row's pair matches before the write and re-reads them from
the written row inside the same transaction after it (filter handlers included), and raises
403, rolling the transaction back, unless

- the row matches the permission before the write (update) and after it (update and create):
  ``row_policy``, so a row cannot be moved out of the rule (or an owner handed over);
- every key the caller writes is granted by a pair matching the row before the write (update)
  and by a pair matching it after the write: ``field_policy`` with the key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, literal_column
from sqlalchemy.sql.elements import ColumnElement

from kernel.base.errors import ApiError
from kernel.policy.access import Decision, Grant, fields_on
from plugins.items.core.rowfilter import row_condition
from plugins.items.errors import field_denied
from plugins.items.tables import items

LABEL = "svc_g{}"
Matches = tuple[bool, ...]


def _conditional(decision: Decision) -> list[tuple[int, Grant]]:
    return [(i, g) for i, g in enumerate(decision.pairs()) if g.condition is not None]


def grant_columns(decision: Decision, *, dialect: str, coll: Any, snapshot: Any, table: Any = items,
                  always: bool = False) -> tuple[ColumnElement[Any], ...]:
    """One 0/1 column (``svc_g<i>``) per conditional pair: only for a paired decision, unless
    ``always`` (the write check also needs the single pair's condition)."""
    if not decision.allowed or not (decision.paired or always):
        return ()
    cols = []
    for i, grant in _conditional(decision):
        cond = row_condition(Decision(True, None, grant.condition), dialect=dialect, coll=coll, table=table,
                             snapshot=snapshot)
        cols.append(case((cond, 1), else_=0).label(LABEL.format(i)) if cond is not None
                    else literal_column("1").label(LABEL.format(i)))
    return tuple(cols)


def matches(decision: Decision, row: Any) -> Matches:
    """Which pairs match ``row`` (selected with ``grant_columns``)."""
    return tuple(g.condition is None or bool(row[LABEL.format(i)]) for i, g in enumerate(decision.pairs()))


def row_fields(decision: Decision, row: Any) -> frozenset[str] | None:
    """The fields granted on ``row`` (selected with ``grant_columns``); ``None``: all."""
    if not decision.allowed:
        return frozenset()
    if not decision.paired:
        return decision.fields
    return fields_on(decision.pairs(), matches(decision, row))


async def match_rows(db: Any, coll: Any, decision: Decision, ids: Iterable[str], *, dialect: str,
                     snapshot: Any, always: bool = False) -> dict[str, Matches]:
    """``{id: matches}`` for the live rows ``ids`` as this transaction sees them (an id that is
    not there is absent). No query when no pair has a condition (then every id matches every
    pair, or none when the decision denies)."""
    wanted = list(dict.fromkeys(ids))
    cols = grant_columns(decision, dialect=dialect, coll=coll, snapshot=snapshot, always=always)
    if not cols:
        return {i: tuple(decision.allowed for _ in decision.pairs()) for i in wanted}
    out: dict[str, Matches] = {}
    for start in range(0, len(wanted), 500):
        rows = await db.all(db.select(items, items.c.id, *cols).where(
            items.c.collection_id == coll.id, items.c.id.in_(wanted[start:start + 500]),
            items.c.deleted_at.is_(None)))
        out.update({r["id"]: matches(decision, r) for r in rows})
    return out


async def fields_by_row(db: Any, coll: Any, decision: Decision, ids: Iterable[str], *, dialect: str,
                        snapshot: Any) -> dict[str, frozenset[str] | None]:
    """``{id: fields granted on it}`` (for readers that already hold the rows: history, search,
    overlays, the answer of a write). Callers skip it when ``decision.paired`` is false."""
    found = await match_rows(db, coll, decision, ids, dialect=dialect, snapshot=snapshot)
    return {i: fields_on(decision.pairs(), m) for i, m in found.items()}


def mask_row(item: dict[str, Any], fields: frozenset[str] | None) -> dict[str, Any]:
    """``item`` without the keys outside ``fields`` (``id`` stays)."""
    if fields is None:
        return item
    return {k: v for k, v in item.items() if k == "id" or k in fields}


def _holds(grants: Sequence[Grant], matched: Matches, key: str) -> bool:
    return any(m and (g.fields is None or key in g.fields) for g, m in zip(grants, matched, strict=True))


@dataclass(frozen=True)
class Written:
    """One row of a write: its id, the keys the caller wrote, the matches before (``None`` for a
    create) and where errors point."""

    id: str
    keys: frozenset[str]
    before: Matches | None
    prefix: tuple[Any, ...] = ()


@dataclass(frozen=True)
class WriteGuard:
    """The permission a write acts on (``decision`` for create or update) with the site's schema
    (relational conditions) and the dialect."""

    decision: Decision
    snapshot: Any
    dialect: str

    @property
    def restricts(self) -> bool:
        """False when no pair has a condition and the fields are checked already (no query)."""
        return any(g.condition is not None for g in self.decision.pairs())

    def columns(self, coll: Any) -> tuple[ColumnElement[Any], ...]:
        """The pair columns to select with a row about to be written, so ``matched(row)`` reads
        the before-state from it instead of a query of its own (none without a conditional pair)."""
        return grant_columns(self.decision, dialect=self.dialect, coll=coll, snapshot=self.snapshot, always=True)

    def matched(self, row: Any) -> Matches:
        """The pairs matching ``row``, selected with ``columns``."""
        if not self.decision.allowed:
            return tuple(False for _ in self.decision.pairs())
        return matches(self.decision, row)

    async def before(self, db: Any, coll: Any, ids: Iterable[str]) -> dict[str, Matches]:
        """The pairs matching each row before the write."""
        return await match_rows(db, coll, self.decision, ids, dialect=self.dialect, snapshot=self.snapshot,
                                always=True)

    async def confirm(self, db: Any, coll: Any, written: list[Written]) -> None:
        """Re-read the written rows in this transaction; 403 (the transaction rolls back) unless
        each row and each written key is granted before and after (see the module docstring)."""
        if not written:
            return
        pairs = self.decision.pairs()
        # Without a conditional pair this costs no query (every row matches every pair).
        after = await self.before(db, coll, [w.id for w in written])
        for w in written:
            now = after.get(w.id, tuple(False for _ in pairs))
            states = [now] if w.before is None else [w.before, now]
            if not all(any(s) for s in states):
                raise ApiError(403, "PERMISSION_DENIED", f"The item '{w.id}' would not satisfy the conditions "
                               f"of your permission to {'create' if w.before is None else 'update'} it",
                               path=list(w.prefix) or None, extensions={"reason": "row_policy"})
            for key in sorted(w.keys):
                if key != "id" and not all(_holds(pairs, s, key) for s in states):
                    raise field_denied(key, [*w.prefix, key], "write")
