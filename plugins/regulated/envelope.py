"""The bus filters of regulated content: item writes encrypt, item reads decrypt or mask.

Writes (``*.items.create`` / ``*.items.update``, before history and search): with envelope
mode on, each changed value of a ``sensitive`` field becomes ``renc1.<...>`` under the item's
data key (``crypto.py``); a value that is the same text as the stored one keeps its stored
ciphertext (no spurious change). A client value that looks like a ciphertext is 400 (it would
read back as something else); the mask written back leaves the stored value as it is. Collections without sensitive fields return at once (schema).

Reads (``items.read``, ``plugins/items/core/reveal.py``): for each sensitive field shown, a
caller holding ``read_decrypted`` on the collection and field sees the value in clear (and a
field-access log entry is written, one insert per read); anyone else sees ``MASK``. A value of
a crypto-shredded item reads as null; one that does not open is 500 ``DECRYPTION_FAILED``,
audited, and nothing else of the answer is sent. Related items nested in an answer are
walked too (their own collection's fields and permission).
"""

from __future__ import annotations

import logging
from typing import Any

from kernel.base.errors import ApiError
from kernel.policy import audit
from kernel.policy.privacy import reads_masked
from kernel.tenancy.scope import SiteDB
from plugins.regulated import accesslog, crypto, store
from plugins.schema.api import get_schema

log = logging.getLogger("svc.regulated")

MASK = "[REDACTED]"
# Before the history (revisions) and search filters (10_000), after flows and extensions (100).
WRITE_PRIORITY = 9_000


async def on_item_write(event: str, payload: Any, ctx: Any) -> Any:
    """Filter of ``<collection>.items.create|update``: encrypt the sensitive values."""
    if ctx.conn is None or ctx.site_id is None or not isinstance(payload, dict):
        return None
    collection, after = payload.get("collection"), payload.get("after")
    if not isinstance(collection, str) or not isinstance(after, dict):
        return None
    names = (await get_schema(ctx.kernel, ctx.site_id)).sensitive_fields(collection)
    if not names:
        return None
    before = payload.get("before") if isinstance(payload.get("before"), dict) else {}
    item_id = str(payload.get("id") or after.get("id"))
    changed = [n for n in names if after.get(n) is not None and after.get(n) != before.get(n)]
    if not changed:
        return None
    if any(after[n] == MASK for n in changed):
        after = _unmasked(after, before, changed)
        payload = {**payload, "after": after}
        changed = [n for n in changed if after.get(n) != before.get(n)]
        if not changed:
            return payload
    db = SiteDB(ctx.site_id, ctx.conn)
    cache: dict[tuple[str, str], bytes] = {}
    for name in changed:
        if crypto.is_token(after[name]) and not await _own_ciphertext(ctx, db, collection, item_id, name, after[name]):
            raise ApiError.validation(f"A value of the sensitive field '{name}' may not begin with "
                                      f"'{crypto.PREFIX}'", path=[name])
    st = await store.site_state(db)
    if not st["envelope_enabled"]:
        return payload
    new = dict(after)
    for name in changed:
        if crypto.is_token(after[name]):
            continue  # this item's own ciphertext (a revert, a promoted version): kept
        dek = await store.dek_for_write(ctx.kernel, db, st, collection, item_id, cache)
        old = before.get(name)
        if crypto.is_token(old):
            try:
                if crypto.decrypt(dek, ctx.site_id, collection, item_id, name, old) == after[name]:
                    new[name] = old  # the same text: keep the stored ciphertext
                    continue
            except crypto.DecryptionFailed:
                pass  # overwritten anyway
        new[name] = crypto.encrypt(dek, ctx.site_id, collection, item_id, name, str(after[name]))
    return {**payload, "after": new}


def _unmasked(after: dict[str, Any], before: dict[str, Any], changed: list[str]) -> dict[str, Any]:
    """``after`` with each sensitive value that is ``MASK`` (what a reader without
    ``read_decrypted`` was shown, written back by a client or the copilot) replaced by the stored
    value: the mask never overwrites data. On a field with no stored value it is 400."""
    out = dict(after)
    for name in changed:
        if after[name] != MASK:
            continue
        if before.get(name) is None:
            raise ApiError.validation(f"'{MASK}' is the mask of the sensitive field '{name}', not a value",
                                      path=[name])
        out[name] = before[name]
    return out


async def _own_ciphertext(ctx: Any, db: SiteDB, collection: str, item_id: str, field: str, token: str) -> bool:
    """Whether ``token`` is a value of this very item and field (history restored by a revert or
    a promote), not text a client made look like ciphertext."""
    row = (await store.data_key_rows(db, collection, [item_id])).get(item_id)
    if row is None or row["wrapped"] is None:
        return False
    try:
        dek = crypto.unwrap(ctx.kernel.secrets, ctx.site_id, collection, item_id, row["wrapped"])
        crypto.decrypt(dek, ctx.site_id, collection, item_id, field, token)
    except crypto.DecryptionFailed:
        return False
    return True


def _groups(schema: Any, collection: str, records: list[dict[str, Any]], ids: list[Any],
            out: dict[str, list[tuple[dict[str, Any], str]]], depth: int = 0) -> None:
    """``(record, item id)`` per collection, nested related items included (bounded depth)."""
    if schema.sensitive_fields(collection):
        out.setdefault(collection, []).extend((r, str(i)) for r, i in zip(records, ids, strict=True) if i is not None)
    if depth >= 4:
        return
    nested = schema.nested_fields(collection)
    if not nested:
        return
    for nf in nested.values():
        if nf.kind not in ("m2o", "o2m") or not nf.related_collection:
            continue
        inner = []
        for record in records:
            value = record.get(nf.name)
            for one in value if isinstance(value, list) else [value]:
                if isinstance(one, dict):
                    inner.append(one)
        if inner:
            _groups(schema, nf.related_collection, inner, [r.get("id") for r in inner], out, depth + 1)


async def clear_fields(ctx: Any, collection: str, names: tuple[str, ...]) -> frozenset[str]:
    """The sensitive fields of ``collection`` the principal may read in clear (``read_decrypted``)."""
    principal = ctx.principal
    if principal is None or reads_masked() is not None:  # e.g. the AI copilot: never in clear
        return frozenset()
    if getattr(principal, "impersonator_id", None):
        # The field-access log would name the impersonated user as the reader: masked (fail closed).
        return frozenset()
    if getattr(principal, "is_admin", False):
        return frozenset(names)
    decision = await ctx.kernel.access.decide(principal, ctx.site_id, collection, "read_decrypted")
    if not decision.allowed:
        return frozenset()
    return frozenset(n for n in names if _unconditional(decision, n))


def _unconditional(decision: Any, name: str) -> bool:
    """Whether a ``read_decrypted`` rule grants ``name`` on every row: a rule with ``conditions``
    is not honoured (fail closed: masked), so clear reads never depend on a row predicate."""
    if not decision.field_allowed(name):
        return False
    if not decision.paired:
        return decision.row_filter is None
    return any(g.condition is None and (g.fields is None or name in g.fields) for g in decision.grants)


async def on_item_read(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``items.read``: decrypt or mask the sensitive fields, log the clear reads."""
    if ctx.site_id is None or not isinstance(payload, dict):
        return
    schema = await get_schema(ctx.kernel, ctx.site_id)
    groups: dict[str, list[tuple[dict[str, Any], str]]] = {}
    _groups(schema, str(payload.get("collection")), payload.get("items") or [], payload.get("ids") or [], groups)
    if groups:
        await reveal_groups(ctx, schema, groups, "read")


async def reveal_groups(ctx: Any, schema: Any, groups: dict[str, list[tuple[dict[str, Any], str]]],
                        purpose: str, *, force_clear: bool = False) -> None:
    entries: list[tuple[str, str, str]] = []
    try:
        if ctx.conn is not None:
            await _reveal(ctx, SiteDB(ctx.site_id, ctx.conn), schema, groups, entries, force_clear)
            await accesslog.write(SiteDB(ctx.site_id, ctx.conn), ctx, entries, purpose)
            return
        async with ctx.kernel.db.connect() as conn:
            await _reveal(ctx, SiteDB(ctx.site_id, conn), schema, groups, entries, force_clear)
        if entries:  # one insert per read, in a transaction of its own
            async with ctx.kernel.db.begin() as conn:
                await accesslog.write(SiteDB(ctx.site_id, conn), ctx, entries, purpose)
    except crypto.DecryptionFailed as exc:
        await _audit_failure(ctx, str(exc))
        raise store.decryption_failed() from None


async def _reveal(ctx: Any, db: SiteDB, schema: Any, groups: dict[str, list[tuple[dict[str, Any], str]]],
                  entries: list[tuple[str, str, str]], force_clear: bool) -> None:
    for collection, pairs in groups.items():
        names = schema.sensitive_fields(collection)
        clear = frozenset(names) if force_clear else await clear_fields(ctx, collection, names)
        need = sorted({i for r, i in pairs if clear and any(crypto.is_token(r.get(n)) for n in clear)})
        rows = await store.data_key_rows(db, collection, need)
        deks: dict[str, Any] = {}  # item id -> its data key's AESGCM (None: shredded)
        for record, item_id in pairs:
            for name in names:
                if name not in record or record[name] is None:
                    continue
                if name not in clear:
                    record[name] = MASK
                    continue
                value = record[name]
                if crypto.is_token(value):
                    if item_id not in deks:
                        row = rows.get(item_id)
                        if row is None:
                            raise crypto.DecryptionFailed(f"no data key for {collection}/{item_id}")
                        deks[item_id] = None if row["wrapped"] is None else crypto.cipher(crypto.unwrap(
                            ctx.kernel.secrets, ctx.site_id, collection, item_id, row["wrapped"]))
                    dek = deks[item_id]
                    record[name] = None if dek is None else crypto.decrypt(dek, ctx.site_id, collection, item_id,
                                                                           name, value)
                    if dek is None:
                        continue  # crypto-shredded: erased, nothing was read
                entries.append((collection, item_id, name))


async def _audit_failure(ctx: Any, why: str) -> None:
    """``decryption_failed`` in the audit trail, in a transaction of its own (the request fails);
    inside a write's transaction the write rolls back, so it is logged instead."""
    log.error("regulated: decryption failed in site %s: %s", ctx.site_id, why)
    if ctx.uow is not None:
        return
    try:
        async with ctx.kernel.db.begin() as conn:
            await audit.record(conn, action="decryption_failed", site_id=ctx.site_id, principal=ctx.principal,
                               target_type="regulated", details={"reason": why[:200]}, request_id=ctx.request_id)
    except Exception:  # noqa: BLE001 - the 500 goes out whatever happens to its audit record
        log.exception("regulated: could not audit a decryption failure")


async def on_field_change(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``fields.create|update``: a field newly marked sensitive needs the migration
    (envelope mode on: its stored plaintext is encrypted by ``envelope/migrate``); unmarking
    a field whose values may be encrypted is refused (turn envelope mode off and migrate first)."""
    if ctx.conn is None or ctx.site_id is None or not isinstance(payload, dict):
        return
    def sensitive(side: Any) -> bool:
        options = side.get("options") if isinstance(side, dict) else None
        return isinstance(options, dict) and options.get("sensitive") is True
    before, after = payload.get("before"), payload.get("after")
    was, now = sensitive(before), sensitive(after)
    if was == now:
        return
    db = SiteDB(ctx.site_id, ctx.conn)
    st = await store.site_state(db)
    if was and (st["envelope_enabled"] or st["migration"] == "decrypt"):
        raise ApiError(409, "CONFLICT", f"'{payload.get('field')}' may hold encrypted values: turn envelope mode "
                       "off and finish its migration before it stops being sensitive")
    if now and st["envelope_enabled"]:
        await store.save_state(db, migration="encrypt", cursor_collection=None, cursor_item=None, migrated=0)
