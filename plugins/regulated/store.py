"""Rows of the regulated plugin: a site's state and keys, its items' data keys (``tables.py``)."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.regulated import crypto
from plugins.regulated.tables import data_keys, keys, state


async def site_state(db: SiteDB) -> dict[str, Any]:
    """The site's state (the defaults when it has none yet)."""
    row = await db.one(db.select(state))
    if row is None:
        return {"envelope_enabled": False, "active_key_id": None, "migration": None, "cursor_collection": None,
                "cursor_item": None, "migrated": 0}
    return dict(row)


async def save_state(db: SiteDB, **values: Any) -> None:
    values["updated_at"] = now_utc()
    done = await db.execute(db.update(state).values(**values))
    if not done.rowcount:
        base = {"envelope_enabled": False, "active_key_id": None, "migration": None, "cursor_collection": None,
                "cursor_item": None, "migrated": 0}
        await db.insert(state, {**base, **values})


def require_keyring(kernel: Any) -> Any:
    """``kernel.secrets`` with an active key (400 ``ENCRYPTION_KEY_REQUIRED`` otherwise)."""
    kernel.secrets.require()
    return kernel.secrets


def active_key(kernel: Any, st: dict[str, Any]) -> str:
    """The site's key-encryption key: the rotated-to key, else ``SVC_ENCRYPTION_KEY``'s."""
    secrets = require_keyring(kernel)
    return st.get("active_key_id") or secrets.active_key_id


async def note_key(db: SiteDB, key_id: str) -> None:
    """Record that the site uses ``key_id`` as its active key (its ``created`` date)."""
    row = await db.one(db.select(keys).where(keys.c.key_id == key_id))
    if row is None:
        await db.insert(keys, {"key_id": key_id, "status": "active", "created_at": now_utc(), "retired_at": None})
    elif row["status"] != "active":
        await db.execute(db.update(keys).where(keys.c.key_id == key_id).values(status="active", retired_at=None))


async def data_key_rows(db: SiteDB, collection: str, item_ids: list[str]) -> dict[str, Any]:
    if not item_ids:
        return {}
    rows = await db.all(db.select(data_keys).where(data_keys.c.collection == collection,
                                                   data_keys.c.item_id.in_(sorted(set(item_ids)))))
    return {r["item_id"]: r for r in rows}


async def dek_for_write(kernel: Any, db: SiteDB, st: dict[str, Any], collection: str, item_id: str,
                        cache: dict[tuple[str, str], bytes], known: Any = ...) -> bytes:
    """The item's data key, created (wrapped by the site's active key) on its first encrypted value;
    409 ``CONFLICT`` for an item whose data was crypto-shredded. ``known``: its row, already read
    (None: it has none); ``cache`` also remembers that the active key was noted."""
    if (collection, item_id) in cache:
        return cache[(collection, item_id)]
    row = (await data_key_rows(db, collection, [item_id])).get(item_id) if known is ... else known
    if row is not None and row["wrapped"] is None:
        raise ApiError(409, "CONFLICT", f"The personal data of '{collection}/{item_id}' was erased: its sensitive "
                       "fields cannot be written again")
    if row is not None:
        try:
            dek = crypto.unwrap(kernel.secrets, db.site_id, collection, item_id, row["wrapped"])
        except crypto.DecryptionFailed:
            raise decryption_failed() from None
    else:
        dek, kek = crypto.new_dek(), active_key(kernel, st)
        if ("", kek) not in cache:  # "" is no collection's name
            await note_key(db, kek)
            cache[("", kek)] = b""
        await db.insert(data_keys, {"collection": collection, "item_id": item_id, "key_id": kek,
                                    "wrapped": crypto.wrap(kernel.secrets, db.site_id, collection, item_id, dek, kek),
                                    "created_at": now_utc(), "shredded_at": None})
    cache[(collection, item_id)] = dek
    return dek


def decryption_failed() -> ApiError:
    return ApiError(500, "DECRYPTION_FAILED", "A sensitive value could not be decrypted; nothing is shown in its "
                    "place. The operator checks that the keys that sealed it are loaded.")


async def shred(db: SiteDB, collection: str, item_ids: list[str]) -> int:
    """Destroy the data keys of ``item_ids`` (their encrypted values never open again)."""
    if not item_ids:
        return 0
    done = await db.execute(db.update(data_keys).where(
        data_keys.c.collection == collection, data_keys.c.item_id.in_(item_ids), data_keys.c.wrapped.is_not(None)
    ).values(wrapped=None, key_id=None, shredded_at=now_utc()))
    return int(done.rowcount or 0)
