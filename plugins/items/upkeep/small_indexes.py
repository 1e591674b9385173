"""``svc items drop-small-indexes``: drop the field indexes that earlier deployments made for
collections holding fewer than ``SVC_ITEMS_INDEX_MIN_ITEMS`` items.

Before that setting (issue 27) every indexed field got its index with the field, and upgrading
drops none of them (``indexes.py`` only makes the missing ones of grown collections). At
thousands of sites they are what slows every plan and insert on the one ``svc_items`` table
(docs/operations.md, "Many sites in one deployment"). The command finds them in three queries
whatever the number of sites (the table's index names, the item counts, the live fields) and
drops at most ``limit`` per run, one statement each: running it again goes on where the last run
stopped, and finds nothing once they are gone.

Never dropped: a unique field's index (it backs the uniqueness check), the indexes of a
collection at or past the threshold, and any index that is not a field index of a live
collection's field. A collection is counted again just before its indexes go, so one that
reached the threshold while the command ran keeps them; one that reaches it later gets them back
from ``GrowthWatch`` (or the next start), as a collection that never had them does.

On PostgreSQL each index goes with ``DROP INDEX CONCURRENTLY``: the items' reads and writes go on
meanwhile (a plain ``DROP INDEX`` would wait for, then block, every query on the table).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
from typing import Any

from sqlalchemy import func, select, text

from plugins.items.tables import item_counts
from plugins.items.upkeep.indexes import existing_indexes, index_name, min_items
from plugins.schema.api import is_indexed, live_fields

log = logging.getLogger("svc.items")
DEFAULT_LIMIT = 500


@dataclasses.dataclass(frozen=True)
class SmallIndex:
    """A field index of a collection below the threshold."""

    name: str
    site_id: str
    collection_id: str
    collection: str
    field: str
    items: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "siteId": self.site_id, "collectionId": self.collection_id,
                "collection": self.collection, "field": self.field, "items": self.items}


async def find(kernel: Any, threshold: int) -> list[SmallIndex]:
    """The non-unique field indexes present on collections holding fewer than ``threshold`` live
    items, ordered by site, collection and field (none when ``threshold`` is 0)."""
    if threshold <= 0:
        return []
    fields = live_fields()
    total = func.sum(item_counts.c.n)
    grown = select(item_counts.c.collection_id).group_by(item_counts.c.collection_id).having(total >= threshold)
    found: list[SmallIndex] = []
    async with kernel.db.connect() as conn:
        present = await existing_indexes(conn)
        counts = {cid: int(n or 0) for cid, n in await conn.execute(
            select(item_counts.c.collection_id, total).group_by(item_counts.c.collection_id)
            .having(total < threshold))}
        # Streamed: at 10,000 sites the fields of small collections are some 300,000 rows.
        result = await conn.stream(select(fields.c.site_id, fields.c.collection_id, fields.c.collection,
                                          fields.c.field, fields.c.type, fields.c.options)
                                   .where(fields.c.collection_id.not_in(grown)))
        async for site_id, collection_id, collection, field, kind, options in result:
            if not is_indexed(kind, options) or (options or {}).get("unique"):
                continue
            name = index_name(collection_id, field)
            if name in present:
                found.append(SmallIndex(name, site_id, collection_id, collection, field,
                                        counts.get(collection_id, 0)))
        await conn.rollback()
    found.sort(key=lambda i: (i.site_id, i.collection, i.field))
    return found


async def _items(kernel: Any, collection_id: str) -> int:
    async with kernel.db.connect() as conn:
        n = (await conn.execute(select(func.coalesce(func.sum(item_counts.c.n), 0)).where(
            item_counts.c.collection_id == collection_id))).scalar_one()
        await conn.rollback()
    return int(n)


async def _drop(kernel: Any, name: str) -> None:
    db = kernel.db
    statement = text(f'DROP INDEX {"CONCURRENTLY " if db.dialect == "postgresql" else ""}IF EXISTS "{name}"')
    if db.dialect == "postgresql":
        # CONCURRENTLY cannot run inside a transaction block: its own connection, in autocommit.
        async with db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(statement)
        return
    async with db.begin() as conn:
        await conn.execute(statement)


async def drop_small_indexes(kernel: Any, *, limit: int = DEFAULT_LIMIT, dry_run: bool = False,
                             threshold: int | None = None) -> dict[str, Any]:
    """Drop (or with ``dry_run`` only list) at most ``limit`` of ``find``'s indexes; the report:
    ``threshold``, ``found`` (before this run), ``indexes`` (those this run took, each with its
    ``outcome``: ``dropped``, ``wouldDrop``, ``grown`` (kept: the collection reached the
    threshold meanwhile) or ``failed`` with the ``error``), the counts of each, and ``left`` (to
    drop by another run)."""
    threshold = min_items(kernel) if threshold is None else threshold
    found = await find(kernel, threshold)
    taken, outcomes = found[:max(0, limit)], []
    grown: dict[str, bool] = {}
    for index in taken:
        entry = index.to_dict()
        if dry_run:
            entry["outcome"] = "wouldDrop"
        else:
            if index.collection_id not in grown:
                grown[index.collection_id] = await _items(kernel, index.collection_id) >= threshold
            try:
                if grown[index.collection_id]:
                    entry["outcome"] = "grown"
                else:
                    await _drop(kernel, index.name)
                    entry["outcome"] = "dropped"
                    log.info("dropped index %s (%s.%s of site %s: %d items, below %d)", index.name,
                             index.collection, index.field, index.site_id, index.items, threshold)
            except Exception as exc:  # noqa: BLE001 - say which, go on with the others; a rerun tries again
                entry["outcome"], entry["error"] = "failed", f"{type(exc).__name__}: {exc}"
        outcomes.append(entry)
    tally = {k: sum(1 for e in outcomes if e["outcome"] == k) for k in ("dropped", "wouldDrop", "grown", "failed")}
    return {"threshold": threshold, "found": len(found), "limit": limit, "dryRun": dry_run, "indexes": outcomes,
            **tally, "left": len(found) - tally["dropped"] - tally["grown"]}


def format_report(report: dict[str, Any]) -> str:
    """What ``svc items drop-small-indexes`` prints."""
    threshold = report["threshold"]
    if threshold <= 0:
        return "SVC_ITEMS_INDEX_MIN_ITEMS is 0: every indexed field keeps its index; nothing to drop"
    lines = [f"SVC_ITEMS_INDEX_MIN_ITEMS={threshold}: {report['found']} field indexes of collections below it"]
    words = {"dropped": "dropped", "wouldDrop": "would drop", "grown": "kept (grew)", "failed": "FAILED"}
    for e in report["indexes"]:
        line = f"  {words[e['outcome']]:<11} {e['name']}  site={e['siteId']} {e['collection']}.{e['field']} " \
               f"({e['items']} items)"
        lines.append(line + (f": {e['error']}" if e.get("error") else ""))
    if report["dryRun"]:
        lines.append(f"dry run: {report['wouldDrop']} would be dropped by this run (at most {report['limit']}), "
                     f"{report['found'] - report['wouldDrop']} more after it")
    else:
        lines.append(f"dropped {report['dropped']}, kept {report['grown']} that grew meanwhile, "
                     f"failed {report['failed']}; {report['left']} left"
                     + (": run again" if report["left"] else ""))
    return "\n".join(lines)


def _limit(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("--limit must be at least 1")
    return n


def register_command(subparsers: Any, kernel_factory: Any) -> None:
    """``svc items drop-small-indexes [--dry-run] [--limit N] [--json]`` (register_commands)."""
    cmd = subparsers.add_parser("items", help="items maintenance: `svc items drop-small-indexes`")
    actions = cmd.add_subparsers(dest="items_command", required=True)
    dropping = actions.add_parser(
        "drop-small-indexes", help="drop the field indexes earlier deployments made for collections below "
                                   "SVC_ITEMS_INDEX_MIN_ITEMS items (unique fields keep theirs)")
    dropping.add_argument("--dry-run", action="store_true", help="list them, drop nothing")
    dropping.add_argument("--limit", type=_limit, default=DEFAULT_LIMIT,
                          help=f"drop at most this many in this run (default {DEFAULT_LIMIT}); run again for the rest")
    dropping.add_argument("--json", action="store_true", help="print the report as JSON")

    def run(args: argparse.Namespace) -> int:
        report = asyncio.run(kernel_factory(
            lambda kernel: drop_small_indexes(kernel, limit=args.limit, dry_run=args.dry_run)))
        print(json.dumps(report, indent=2) if args.json else format_report(report))
        return 1 if report["failed"] else 0

    dropping.set_defaults(func=run)
