"""The ``webhooks`` section of the config manifest (the schema plugin's ``config_sections`` hook).

An entry is ``{ name, kind, url?, collections, operations }``, keyed by ``name``; the secret is
never exported. On import, an entry may carry ``secret`` (write-only, as in the API). A new
webhook subscription imported without one gets a random secret and starts ``paused``: set a
secret you know with ``PATCH { secret }``, then resume it. An existing subscription keeps its
secret, status and position; its url and filters are updated.
"""

from __future__ import annotations

import secrets as random_secrets
from typing import Any

from kernel import ApiError
from kernel.db.meta import now_utc
from plugins.cdc import subscriptions as subs
from plugins.cdc.tables import subscriptions

ENTRY_KEYS = {"name", "kind", "url", "secret", "collections", "operations"}


class WebhooksSection:
    name = "webhooks"
    key = "name"

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def export(self, db: Any) -> list[dict[str, Any]]:
        rows = await db.all(db.select(subscriptions).order_by(subscriptions.c.name))
        out = []
        for row in rows:
            entry: dict[str, Any] = {"name": row["name"], "kind": row["kind"]}
            if row["kind"] == "webhook":
                entry["url"] = row["url"]
            entry["collections"] = list(row["collections"] or [])
            entry["operations"] = list(row["operations"] or [])
            out.append(entry)
        return out

    def check(self, entry: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(entry, dict):
            raise ApiError.validation("A webhooks entry is an object")
        unknown = sorted(set(entry) - ENTRY_KEYS)
        if unknown:
            raise ApiError.validation(f"Unknown field '{unknown[0]}'", path=[unknown[0]])
        values = subs.parse_body(entry, creating=True)
        # In export form (so an unchanged entry diffs as unchanged), plus a given secret.
        out = {"name": values["name"], "kind": values["kind"]}
        if "url" in values:
            out["url"] = values["url"]
        out.update(collections=values["collections"], operations=values["operations"])
        if "secret" in values:
            out["secret"] = values["secret"]
        return out

    async def put(self, uow: Any, entry: dict[str, Any]) -> None:
        values = subs.parse_body(entry, creating=True)
        db, site_id, kernel = uow.db, uow.site_id, self.kernel
        row = await db.one(db.select(subscriptions).where(subscriptions.c.name == values["name"]))
        now = now_utc()
        if row is not None:
            if row["kind"] != values["kind"]:
                raise ApiError.conflict(f"Subscription '{values['name']}' is a {row['kind']} subscription; "
                                        "its kind cannot change")
            changes = {k: values[k] for k in ("url", "collections", "operations") if k in values}
            if "secret" in values:
                changes["secret"] = kernel.secrets.seal(site_id, values["secret"], purpose=subs.SECRET_PURPOSE)
            await db.execute(db.update(subscriptions).where(subscriptions.c.id == row["id"])
                             .values(**changes, updated_at=now))
            return
        await subs.check_room(db, values["name"])
        status, reason = "active", None
        if values["kind"] == "webhook":
            if "secret" not in values:
                values["secret"] = random_secrets.token_urlsafe(32)
                status, reason = "paused", "Imported without a secret: set one with PATCH { secret }, then resume"
            values["secret"] = kernel.secrets.seal(site_id, values["secret"], purpose=subs.SECRET_PURPOSE)
        await subs.insert(kernel, uow, values, status=status, reason=reason)

    async def delete(self, uow: Any, key: str) -> None:
        db = uow.db
        row = await db.one(db.select(subscriptions).where(subscriptions.c.name == key))
        if row is None:
            return
        await db.execute(db.delete(subscriptions).where(subscriptions.c.id == row["id"]))
        await self.kernel.events.remove_checkpoint(uow.conn, uow.site_id, subs.checkpoint_name(row["id"]))
