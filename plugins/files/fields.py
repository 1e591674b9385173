"""The schema's ``files`` field type holds file ids that must exist in the same site.

A bus filter on ``items.create`` and ``items.update`` (inside the write's transaction) looks
up every id a ``files`` field of the written item holds, in the item's site only, and vetoes
the write with 400 ``VALIDATION_FAILED`` (path: the field) naming the first missing one. Ids
of another site's files are missing here by construction.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.files.tables import files
from plugins.schema import api as schema


async def check_file_ids(event: str, payload: Any, ctx: Any) -> None:
    if not isinstance(payload, dict) or ctx.conn is None or ctx.site_id is None:
        return
    after, collection = payload.get("after"), payload.get("collection")
    if not isinstance(after, dict) or not isinstance(collection, str):
        return
    snapshot = await schema.get_schema(ctx.kernel, ctx.site_id)
    coll = snapshot.collection(collection)
    if coll is None:
        return
    before = payload.get("before") if isinstance(payload.get("before"), dict) else {}
    db = SiteDB(ctx.site_id, ctx.conn)
    for name, field in coll.fields.items():
        if field.type != "files":
            continue
        ids = after.get(name)
        if not isinstance(ids, list) or not ids or ids == before.get(name):
            continue
        wanted = {str(i) for i in ids}
        found = {r["id"] for r in await db.all(db.select(files, files.c.id).where(files.c.id.in_(wanted)))}
        missing = [i for i in ids if str(i) not in found]
        if missing:
            raise ApiError.validation(f"No file '{str(missing[0])[:40]}' in this site", path=[name])
