"""Pins: a field-level lock one holder keeps on one field of one item.

While a pin is active (not expired), an update that changes the pinned field's value is
refused with 409 ``CONFLICT`` (``extensions.pinnedBy``) unless the writer is the holder; the
check runs in the item write filter (``history_events``), so REST, GraphQL, flows, revert and
promote all meet it. A holder is an identity (``user`` or ``api_key``, from the principal) or
server code writing with the cause ``release:<id>`` / ``version:<id>`` (``items.api``'s
``cause=``), which writes as that holder. Pins are created by
``POST .../pins`` (update permission and write access to the field), released by their holder
or a site admin, and lapse at ``expiresAt``. Deletes are not blocked: a pin guards values, the
delete permission guards existence. See docs/decisions/items-pins.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, or_, select
from sqlalchemy.exc import IntegrityError

from kernel.base.errors import ApiError
from kernel.db.meta import iso, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.items.errors import field_denied
from plugins.items.history.target import ItemTarget, load_target, reject_unknown_keys
from plugins.items.tables import pins

HOLDER_KINDS = ("user", "api_key", "release", "version")
MAX_REASON = 500
# Write causes that write as a pin holder of the same kind (a release publishing what it pinned).
CAUSE_HOLDERS = ("release", "version")


def holder_of(principal: Any, caused_by: str | None = None) -> tuple[str, str] | None:
    """Who writes: the holder named by the write's cause (``release:<id>``), else the API key,
    else the user; ``None`` for anonymous callers, who can hold no pin."""
    kind, _, ref = caused_by.partition(":") if isinstance(caused_by, str) else ("", "", "")
    if kind in CAUSE_HOLDERS and ref:
        return kind, ref
    if getattr(principal, "kind", None) == "api_key" and getattr(principal, "api_key_id", None):
        return "api_key", principal.api_key_id
    user_id = getattr(principal, "user_id", None)
    return ("user", user_id) if user_id else None


def pin_record(row: Any) -> dict[str, Any]:
    """A pin as the API shows it."""
    return {"field": row["field"], "pinnedBy": {"kind": row["holder_kind"], "id": row["holder_id"]},
            "reason": row["reason"], "createdAt": iso(row["created_at"]), "expiresAt": iso(row["expires_at"])}


def _active(db: Any, coll: Any, item_id: str) -> Any:
    now = now_utc()
    return db.select(pins).where(pins.c.collection_id == coll.id, pins.c.item_id == item_id,
                                 or_(pins.c.expires_at.is_(None), pins.c.expires_at > now))


# check_write's query, built once: it runs in every update's transaction.
_PINNED = SiteDB.template(
    select(pins).where(pins.c.collection_id == bindparam("coll"), pins.c.item_id == bindparam("item"),
                       or_(pins.c.expires_at.is_(None), pins.c.expires_at > bindparam("now", type_=pins.c.expires_at.type)),
                       pins.c.field.in_(bindparam("fields", expanding=True))).order_by(pins.c.field), pins)


def lapsed(row: Any) -> bool:
    """Whether a pin row has expired (SQLite hands back naive datetimes, which are UTC here)."""
    expires = row["expires_at"]
    if expires is None:
        return False
    return (expires if expires.tzinfo else expires.replace(tzinfo=dt.UTC)) <= now_utc()


def pinned_conflict(row: Any) -> ApiError:
    """409 ``CONFLICT`` at the field, naming the holder."""
    return ApiError(409, "CONFLICT", f"The field '{row['field']}' is pinned by another holder", path=[row["field"]],
                    extensions={"field": row["field"], "pinnedBy": {"kind": row["holder_kind"], "id": row["holder_id"]},
                                "expiresAt": iso(row["expires_at"])})


async def check_write(db: Any, coll: Any, item_id: str, changed: Iterable[str], principal: Any,
                      caused_by: str | None = None) -> None:
    """409 when a changed field is pinned by someone other than the writer (one query, only
    when something changed); ``caused_by``: the write's cause (``holder_of``)."""
    names = sorted(set(changed))
    if not names:
        return
    rows = (await db.run(_PINNED, {"coll": coll.id, "item": item_id, "now": now_utc(), "fields": names})).mappings()
    mine = holder_of(principal, caused_by)
    for row in rows:
        if (row["holder_kind"], row["holder_id"]) != mine:
            raise pinned_conflict(row)


def _readable_pins(target: ItemTarget, rows: Iterable[Any]) -> list[dict[str, Any]]:
    allowed = target.readable
    return [pin_record(r) for r in rows if allowed is None or r["field"] in allowed]


async def list_pins(ctx: Any, collection: str, item_id: str) -> list[dict[str, Any]]:
    """The item's active pins on fields the caller may read."""
    async with ctx.reader() as db:
        target = await load_target(ctx, db, collection, item_id, "read")
        rows = await db.all(_active(db, target.coll, target.row["id"]).order_by(pins.c.field))
    return _readable_pins(target, rows)


async def _pin_row(db: Any, target: ItemTarget, field: str) -> Any:
    row = None
    if isinstance(field, str) and field in target.coll.fields:
        row = await db.one(_active(db, target.coll, target.row["id"]).where(pins.c.field == field))
    if row is None or not _readable_pins(target, [row]):
        raise ApiError.not_found(f"No active pin on '{str(field)[:64]}' of this item")
    return row


async def get_pin(ctx: Any, collection: str, item_id: str, field: str) -> dict[str, Any]:
    """One active pin (404 ``NOT_FOUND`` when the field is not pinned)."""
    async with ctx.reader() as db:
        target = await load_target(ctx, db, collection, item_id, "read")
        return pin_record(await _pin_row(db, target, field))


def parse_expiry(value: Any) -> dt.datetime | None:
    """``expiresAt``: null, or an ISO 8601 time in the future (no offset means UTC)."""
    if value is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 64 else None
        if moment is not None:
            moment = (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    except (ValueError, OverflowError):
        moment = None
    if moment is None:
        raise ApiError.validation("'expiresAt' must be an ISO 8601 date-time", path=["expiresAt"])
    if moment <= now_utc():
        raise ApiError.validation("'expiresAt' must be in the future", path=["expiresAt"])
    return moment


def _pin_body(target: ItemTarget, body: Any) -> tuple[str, str | None, dt.datetime | None]:
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown_keys(body, frozenset({"field", "reason", "expiresAt"}))
    name = body.get("field")
    if not isinstance(name, str) or name not in target.coll.fields:
        raise ApiError.validation("'field' must name a content field of the collection", path=["field"])
    if not target.decision.field_allowed(name):
        raise field_denied(name, ["field"], "pin")
    reason = body.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
        raise ApiError.validation(f"'reason' must be a string of at most {MAX_REASON} characters", path=["reason"])
    return name, reason, parse_expiry(body.get("expiresAt"))


async def create_pin(ctx: Any, collection: str, item_id: str, body: Any, *,
                     holder: tuple[str, str] | None = None) -> dict[str, Any]:
    """``POST .../pins`` ``{ field, reason?, expiresAt? }``: pin a field for the caller (or for
    ``holder``, server code). The holder's own pin is renewed; another's active pin is 409."""
    holder = holder or holder_of(ctx.principal)
    if holder is None:
        raise ApiError.unauthenticated("Pinning a field needs an identity; sign in or use an API key")
    async with ctx.unit_of_work() as u:
        db = u.db
        target = await load_target(ctx, db, collection, item_id, "update")
        name, reason, expires = _pin_body(target, body)
        key = (pins.c.collection_id == target.coll.id, pins.c.item_id == target.row["id"], pins.c.field == name)
        existing = await db.one(db.select(pins).where(*key))
        active = existing is not None and not lapsed(existing)
        if active and (existing["holder_kind"], existing["holder_id"]) != holder:
            raise pinned_conflict(existing)
        values = {"holder_kind": holder[0], "holder_id": holder[1], "reason": reason, "created_at": now_utc(),
                  "expires_at": expires}
        if existing is not None:  # the holder's own, or a lapsed pin: take it over
            await db.execute(db.update(pins).where(*key).values(**values))
        else:
            try:
                await db.insert(pins, {"collection_id": target.coll.id, "item_id": target.row["id"], "field": name,
                                       **values})
            except IntegrityError as exc:  # another writer pinned it in between
                raise ApiError(409, "CONFLICT", f"The field '{name}' was pinned at the same time",
                               path=["field"]) from exc
        row = await db.one(db.select(pins).where(*key))
    return pin_record(row)


async def release_pin(ctx: Any, collection: str, item_id: str, field: str) -> None:
    """``DELETE .../pins/{field}``: by the holder or a site admin (403 otherwise)."""
    async with ctx.unit_of_work() as u:
        db = u.db
        target = await load_target(ctx, db, collection, item_id, "read")
        row = await _pin_row(db, target, field)
        if (row["holder_kind"], row["holder_id"]) != holder_of(ctx.principal) and not ctx.principal.is_admin:
            raise ApiError.forbidden("Only the pin's holder or a site admin may release it", reason="not_pin_holder",
                                     pinnedBy={"kind": row["holder_kind"], "id": row["holder_id"]})
        await db.execute(db.delete(pins).where(pins.c.collection_id == target.coll.id,
                                               pins.c.item_id == target.row["id"], pins.c.field == row["field"]))
