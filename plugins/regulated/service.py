"""Regulated content's logic: keys, rotation and rewrap, envelope mode and its migration, the
field-access log, and subject access export (no Falcon; ``routes.py`` parses and answers).

Every function works in the request's site (``ctx.site_id``) and is called by a site admin (the
routes are ``auth="admin"``): nothing here reads or counts another site's rows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.db.meta import iso
from kernel.http.media import reject_unknown
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.accounts import api as accounts_api
from plugins.items import api as items_api
from plugins.regulated import accesslog, crypto, store
from plugins.regulated.tables import data_keys, keys
from plugins.schema.api import get_schema

MAX_BATCH = 1_000
SAR_MAX_RECORDS = 1_000
SAR_MAX_REVISIONS = 100


def _body(body: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown(body, allowed)
    return body


def batch_size(ctx: Any, body: Any) -> int:
    """``{ limit? }`` of a batch call, bounded by ``SVC_REGULATED_BATCH``."""
    body = _body({} if body is None else body, {"limit"})
    default = int(ctx.kernel.settings.get("regulated_batch") or 200)
    limit = body.get("limit", default)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_BATCH:
        raise ApiError.validation(f"'limit' must be an integer from 1 to {MAX_BATCH}", path=["limit"])
    return min(limit, default)


# ---------------------------------------------------------------------- keys

async def list_keys(ctx: Any) -> list[dict[str, Any]]:
    """Every loaded key (``SVC_ENCRYPTION_KEY`` first) and every key the site used, with its status
    for this site: ``active``, ``retired``, ``provisioned`` (loaded, never used here) or
    ``missing`` (used here, no longer loaded: what it wrapped does not open)."""
    secrets = ctx.kernel.secrets
    async with ctx.reader() as db:
        st = await store.site_state(db)
        used = {r["key_id"]: r for r in await db.all(db.select(keys))}
    active = (st["active_key_id"] or secrets.active_key_id) if secrets.available else None
    out = []
    for key_id in [*secrets.key_ids, *sorted(k for k in used if k not in secrets.key_ids)]:
        row = used.get(key_id)
        status = ("active" if key_id == active else "missing" if key_id not in secrets.key_ids
                  else "retired" if row is not None else "provisioned")
        out.append({"id": key_id, "status": status, "algorithm": crypto.ALGORITHM,
                    "created": iso(row["created_at"]) if row is not None else None,
                    "retired": iso(row["retired_at"]) if row is not None and status == "retired" else None,
                    "source": "SVC_ENCRYPTION_KEY" if key_id == secrets.active_key_id else
                              "SVC_ENCRYPTION_KEYS" if key_id in secrets.key_ids else None})
    return out


async def rotate(ctx: Any, body: Any) -> dict[str, Any]:
    """``{ keyId }``: the site's data keys are wrapped by ``keyId`` from now on; the previous key
    is retired (``rewrap`` moves what it wrapped). 422 ``KEY_NOT_PROVISIONED`` for a key that is
    not loaded; rotating to the active key changes nothing."""
    body = _body(body, {"keyId"})
    key_id = body.get("keyId")
    if not isinstance(key_id, str) or not key_id:
        raise ApiError.validation("'keyId' is the id of a provisioned key", path=["keyId"])
    secrets = store.require_keyring(ctx.kernel)
    if key_id not in secrets.key_ids:
        raise ApiError(422, "KEY_NOT_PROVISIONED", f"No key '{key_id[:40]}' is loaded: the operator provisions it "
                       "in SVC_ENCRYPTION_KEYS (id:base64) and restarts", path=["keyId"])
    async with ctx.unit_of_work() as uow:
        db = uow.db
        st = await store.site_state(db)
        previous = store.active_key(ctx.kernel, st)
        if previous != key_id:
            used = await db.one(db.select(keys).where(keys.c.key_id == previous))
            if used is None:
                await store.note_key(db, previous)
            await db.execute(db.update(keys).where(keys.c.key_id == previous).values(
                status="retired", retired_at=func.now()))
            await store.note_key(db, key_id)
            await store.save_state(db, active_key_id=key_id)
            await audit.record(uow.conn, action="encryption_key_rotated", site_id=ctx.site_id, principal=ctx.principal,
                               target_type="encryption_key", target_id=key_id, details={"previous": previous},
                               ip=ctx.client_ip, request_id=ctx.request_id)
        pending = await _rewrap_counts(db, key_id, secrets)
    return {"activeKeyId": key_id, "previousKeyId": previous, "changed": previous != key_id, **pending}


async def _rewrap_counts(db: SiteDB, active: str, secrets: Any) -> dict[str, int]:
    base = db.select(data_keys, func.count()).where(data_keys.c.wrapped.is_not(None), data_keys.c.key_id != active)
    total = int(await db.scalar(base) or 0)
    unavailable = int(await db.scalar(base.where(data_keys.c.key_id.not_in(secrets.key_ids))) or 0)
    return {"remaining": total - unavailable, "unavailable": unavailable}


async def rewrap(ctx: Any, body: Any) -> dict[str, Any]:
    """One bounded batch: data keys wrapped by another loaded key are wrapped again by the active
    key, in one transaction (a crash loses nothing: the batch is all or nothing, and the next
    call finds what is left). Idempotent: a rewrapped key is not selected again."""
    limit = batch_size(ctx, body)
    secrets = store.require_keyring(ctx.kernel)
    async with ctx.unit_of_work() as uow:
        done = await rewrap_batch(ctx.kernel, uow.db, limit)
        st = await store.site_state(uow.db)
        active = store.active_key(ctx.kernel, st)
        counts = await _rewrap_counts(uow.db, active, secrets)
    # -- govern43: the rewrap in GET /work, whoever drains it (its count: keys rewrapped so far)
    await ctx.kernel.work.resume(ctx.site_id, "rewrap", "Key rewrap", ctx.principal, add=done,
                                 finished=counts["remaining"] == 0)
    return {"activeKeyId": active, "rewrapped": done, **counts, "done": counts["remaining"] == 0}


async def rewrap_batch(kernel: Any, db: SiteDB, limit: int) -> int:
    secrets = kernel.secrets
    active = store.active_key(kernel, await store.site_state(db))
    older = [k for k in secrets.key_ids if k != active]
    if not older:
        return 0
    rows = await db.all(db.select(data_keys).where(data_keys.c.key_id.in_(older), data_keys.c.wrapped.is_not(None))
                        .order_by(data_keys.c.collection, data_keys.c.item_id).limit(limit))
    for row in rows:
        try:
            dek = crypto.unwrap(secrets, db.site_id, row["collection"], row["item_id"], row["wrapped"])
        except crypto.DecryptionFailed:
            raise store.decryption_failed() from None
        await db.execute(db.update(data_keys).where(
            data_keys.c.collection == row["collection"], data_keys.c.item_id == row["item_id"],
            data_keys.c.key_id == row["key_id"]).values(
            key_id=active, wrapped=crypto.wrap(secrets, db.site_id, row["collection"], row["item_id"], dek, active)))
    return len(rows)


# ---------------------------------------------------------------------- envelope mode

def _progress(st: dict[str, Any], kernel: Any) -> dict[str, Any]:
    state = {"encrypt": "encrypting", "decrypt": "decrypting"}.get(st["migration"] or "", "idle")
    active = (st["active_key_id"] or kernel.secrets.active_key_id) if kernel.secrets.available else None
    return {"enabled": bool(st["envelope_enabled"]), "activeKeyId": active,
            "migration": {"state": state, "migrated": int(st["migrated"] or 0), "done": state == "idle"},
            "done": state == "idle"}


async def envelope_state(ctx: Any) -> dict[str, Any]:
    async with ctx.reader() as db:
        return _progress(await store.site_state(db), ctx.kernel)


async def toggle(ctx: Any, body: Any) -> dict[str, Any]:
    """``{ enabled, password }``: the admin's own password again (401 ``INVALID_CREDENTIALS``;
    the route counts every try against the auth rate limit). A change starts the migration:
    ``encrypt`` the stored plaintext of sensitive fields, or (off) ``decrypt`` it back."""
    body = _body(body, {"enabled", "password"})
    enabled, password = body.get("enabled"), body.get("password")
    if not isinstance(enabled, bool):
        raise ApiError.validation("'enabled' must be true or false", path=["enabled"])
    if not isinstance(password, str) or not password or len(password) > 1024:
        raise ApiError.validation("'password' is your own password (step-up)", path=["password"])
    if not await accounts_api.verify_password(ctx.kernel, ctx.principal, password):
        raise ApiError(401, "INVALID_CREDENTIALS", "The password is wrong (an API key cannot change envelope mode)")
    if enabled:
        store.require_keyring(ctx.kernel)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        st = await store.site_state(db)
        if bool(st["envelope_enabled"]) != enabled:
            values = {"envelope_enabled": enabled, "migration": "encrypt" if enabled else "decrypt",
                      "cursor_collection": None, "cursor_item": None, "migrated": 0}
            if enabled:
                await store.note_key(db, store.active_key(ctx.kernel, st))
            await store.save_state(db, **values)
            await audit.record(uow.conn, action="envelope_mode_changed", site_id=ctx.site_id, principal=ctx.principal,
                               target_type="site", target_id=ctx.site_id, details={"enabled": enabled},
                               ip=ctx.client_ip, request_id=ctx.request_id)
        st = await store.site_state(db)
    return _progress(st, ctx.kernel)


async def migrate(ctx: Any, body: Any) -> dict[str, Any]:
    """One bounded batch of the migration (poll until ``done``)."""
    limit = batch_size(ctx, body)
    async with ctx.unit_of_work() as uow:
        await migrate_batch(ctx.kernel, uow.db, limit)
        st = await store.site_state(uow.db)
    progress = _progress(st, ctx.kernel)
    # -- govern43: the migration in GET /work, whoever drains it
    await ctx.kernel.work.resume(ctx.site_id, "migration", "Envelope migration", ctx.principal,
                                 done=progress["migration"]["migrated"], finished=progress["done"])
    return progress


async def migrate_batch(kernel: Any, db: SiteDB, limit: int) -> int:
    """Up to ``limit`` stored items of the collections with sensitive fields, from the cursor,
    rewritten (item, revisions, versions) with their cursor in the same transaction."""
    st = await store.site_state(db)
    if st["migration"] is None:
        return 0
    schema = await get_schema(kernel, db.site_id)
    colls = {c.id: c for c in schema.collections.values() if schema.sensitive_fields(c.name)}
    after = (st["cursor_collection"], st["cursor_item"]) if st["cursor_collection"] else None
    rows = await items_api.stored_page(db, list(colls), after, limit)
    encrypting = st["migration"] == "encrypt"
    if encrypting:
        store.require_keyring(kernel)
    known: dict[str, dict[str, Any]] = {}  # the page's data keys, one query per collection
    for coll_id in dict.fromkeys(r["collection_id"] for r in rows):
        known[coll_id] = await store.data_key_rows(db, colls[coll_id].name,
                                                   [r["id"] for r in rows if r["collection_id"] == coll_id])
    cache: dict[tuple[str, str], bytes] = {}
    for row in rows:
        coll = colls[row["collection_id"]]
        names = schema.sensitive_fields(coll.name)
        transform = await _transform(kernel, db, st, coll.name, row["id"], names, encrypting,
                                     known[row["collection_id"]].get(row["id"]), cache)
        if transform is not None:
            await items_api.rewrite_stored(db, row["collection_id"], row["id"], row["data"], transform)
    if len(rows) < limit:
        await store.save_state(db, migration=None, cursor_collection=None, cursor_item=None,
                               migrated=int(st["migrated"] or 0) + len(rows))
    else:
        await store.save_state(db, cursor_collection=rows[-1]["collection_id"], cursor_item=rows[-1]["id"],
                               migrated=int(st["migrated"] or 0) + len(rows))
    return len(rows)


async def _transform(kernel: Any, db: SiteDB, st: dict[str, Any], collection: str, item_id: str,
                     names: tuple[str, ...], encrypting: bool, row: Any,
                     cache: dict[tuple[str, str], bytes]) -> _Sync | None:
    """The content transform of one item (``row``: its data key row, if any; None: a
    crypto-shredded item is left as it is)."""
    if row is not None and row["wrapped"] is None:
        return None
    dek = None
    if encrypting or row is not None:
        dek = await store.dek_for_write(kernel, db, st, collection, item_id, cache, row)
    return _Sync(db.site_id, collection, item_id, names, encrypting, dek)


class _Sync:
    """A synchronous transform over one item's content (its data key already unwrapped)."""

    def __init__(self, site_id: str, collection: str, item_id: str, names: tuple[str, ...],
                 encrypting: bool, dek: bytes | None) -> None:
        self.args = (site_id, collection, item_id)
        self.names, self.encrypting, self.dek = names, encrypting, dek

    def __call__(self, data: dict[str, Any]) -> dict[str, Any] | None:
        changed = False
        for name in self.names:
            value = data.get(name)
            if value is None:
                continue
            if self.dek is None:  # decrypting an item that never had a data key
                if crypto.is_token(value):
                    raise store.decryption_failed()
                continue
            if self.encrypting and not crypto.is_token(value):
                data[name] = crypto.encrypt(self.dek, *self.args, name, str(value))
                changed = True
            elif not self.encrypting and crypto.is_token(value):
                try:
                    data[name] = crypto.decrypt(self.dek, *self.args, name, value)
                except crypto.DecryptionFailed:
                    raise store.decryption_failed() from None
                changed = True
        return data if changed else None


# ---------------------------------------------------------------------- field-access log

async def field_access_log(ctx: Any, params: dict[str, str | None], limit: int, offset: int
                           ) -> tuple[list[dict[str, Any]], int]:
    filters = {"collection": params.get("collection"), "item_id": params.get("itemId"),
               "actor_id": params.get("actorId")}
    for key, value in params.items():
        if value is not None and (len(value) > 64 or "\x00" in value):
            raise ApiError.validation(f"'{key}' is at most 64 characters, without NUL", path=["query", key])
    async with ctx.reader() as db:
        return await accesslog.list_entries(db, filters, limit, offset)


# ---------------------------------------------------------------------- subject access

def split_filter(schema: Any, collection: str, tree: Any) -> tuple[Any, dict[str, str]]:
    """The SQL part of a SAR filter and its equality matches on sensitive fields: a top-level
    ``{ field: { _eq: "text" } }`` (or inside a top-level ``_and``) on a sensitive field is
    matched after decryption, in the service; any other use of a sensitive field is 400."""
    names = set(schema.sensitive_fields(collection))
    if not isinstance(tree, dict):
        raise ApiError.validation("'filter' must be an object", path=["filter"])
    matches: dict[str, str] = {}

    def take(node: dict[str, Any], path: list[Any]) -> dict[str, Any]:
        rest = {}
        for key, cond in node.items():
            if key in names:
                if not (isinstance(cond, dict) and set(cond) == {"_eq"} and isinstance(cond["_eq"], str)
                        and cond["_eq"]):
                    raise ApiError.validation("A sensitive field is matched only by { \"_eq\": \"text\" } here",
                                              path=[*path, key])
                matches[key] = cond["_eq"]
            elif key == "_and" and isinstance(cond, list):
                parts = [take(c, [*path, "_and", i]) if isinstance(c, dict) else c for i, c in enumerate(cond)]
                if [p for p in parts if p != {}]:
                    rest["_and"] = [p for p in parts if p != {}]
            else:
                rest[key] = cond
        return rest

    return take(tree, ["filter"]), matches


async def sar_export(ctx: Any, body: Any) -> dict[str, Any]:
    """``{ collection, filter }``: the subject's records, decrypted, and their provenance."""
    body = _body(body, {"collection", "filter"})
    collection = body.get("collection")
    if not isinstance(collection, str) or not collection or len(collection) > 64:
        raise ApiError.validation("'collection' is a collection name", path=["collection"])
    schema = await get_schema(ctx.kernel, ctx.site_id)
    if schema.collection(collection) is None:
        raise ApiError.not_found(f"No collection '{collection}' in this site")
    if body.get("filter") is None or body.get("filter") == {}:
        raise ApiError.validation("'filter' names the subject (an export of everything is not a SAR)", path=["filter"])
    sql, matches = split_filter(schema, collection, body["filter"])
    records: list[dict[str, Any]] = []
    offset = 0
    while True:  # pages of the SQL part; the sensitive matches are checked on the decrypted values
        page = (await items_api.list_items(ctx, collection, items_api.query(
            filter=sql or None, limit=items_api.MAX_LIMIT, offset=offset, sort=["id"]))).items
        records += [r for r in page if all(r.get(k) == v for k, v in matches.items())]
        offset += len(page)
        if len(page) < items_api.MAX_LIMIT:
            break
        if offset >= SAR_MAX_RECORDS * 10:
            raise ApiError.validation(f"The filter matches more than {SAR_MAX_RECORDS * 10} items before the "
                                      "sensitive matches: narrow it", path=["filter"])
    if len(records) > SAR_MAX_RECORDS:
        raise ApiError.validation(f"The subject has more than {SAR_MAX_RECORDS} records: narrow the filter",
                                  path=["filter"])
    provenance = {}
    for record in records:
        revs, _meta = await items_api.list_revisions(ctx, collection, str(record["id"]), limit=SAR_MAX_REVISIONS)
        provenance[str(record["id"])] = [
            {"id": r["id"], "kind": r["kind"], "createdAt": r["createdAt"], "committedAt": r["committedAt"],
             "actor": r["actor"], "causedBy": r["causedBy"], "origin": r["origin"], "fields": sorted(r["delta"])}
            for r in revs]
    names = schema.sensitive_fields(collection)
    entries = [(collection, str(r["id"]), n) for r in records for n in names]
    async with ctx.unit_of_work() as uow:
        await accesslog.write(uow.db, ctx, entries or [(collection, "-", "-")], "sar")
        await audit.record(uow.conn, action="subject_access_exported", site_id=ctx.site_id, principal=ctx.principal,
                           target_type="collection", target_id=collection,
                           details={"recordCount": len(records), "matchedOnSensitive": sorted(matches)},
                           ip=ctx.client_ip, request_id=ctx.request_id)
    return {"collection": collection, "records": records, "provenance": provenance, "recordCount": len(records)}

