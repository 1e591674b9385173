"""Item events on the bus: ``items.<op>`` and ``<collection>.items.<op>`` (create, update, delete).

Filters run inside the write's transaction, in that order (the generic event first, so a
change-feed outbox sees every collection's writes); each may return a replacement payload
(its ``after`` is the new content, checked again) or raise to veto, which rolls the whole
request back. Actions are queued on the unit of work and run after commit.

Payload: ``{ siteId, collection, id, before?, after?, principal }``; ``before``/``after`` are
whole items (structural keys and content, unmasked: handlers are server code). Deletes
caused by ``onDelete`` carry ``cause: { collection, id, relation }``; set-null updates too.
Writes made with a cause (``items.api``'s ``cause=``: ``release:<id>``, ``flow-run:<id>``)
carry it as ``causedBy`` (also the cascaded writes of that unit of work).

Every write whose actions are queued here also emits its durable event in the same
transaction (``uow.emit``, the kernel's event log): ``items.<op>`` with the collection, the
item id and the names of the fields it changed (never their values).
"""

from __future__ import annotations

from typing import Any

OPS = ("create", "update", "delete")


def event_names(collection: str, op: str) -> tuple[str, str]:
    """The generic and the collection-scoped name of an item event."""
    return f"items.{op}", f"{collection}.items.{op}"


def payload(uow: Any, collection: str, item_id: str, *, before: dict[str, Any] | None = None,
            after: dict[str, Any] | None = None, cause: dict[str, Any] | None = None) -> dict[str, Any]:
    """The payload of one item event."""
    principal = getattr(uow.principal, "summary", None)
    out: dict[str, Any] = {
        "siteId": uow.site_id, "collection": collection, "id": item_id,
        "principal": principal() if callable(principal) else None,
    }
    if before is not None:
        out["before"] = before
    if after is not None:
        out["after"] = after
    if cause is not None:
        out["cause"] = cause
    if getattr(uow, "cause", None):  # the write's cause (``release:<id>``), see service.transaction
        out["causedBy"] = uow.cause
    return out


def has_filters(uow: Any, collection: str, op: str) -> bool:
    """Whether anything listens to the event (else the payload cannot have changed)."""
    bus = uow.kernel.bus
    return any(bus.has_handlers(name) for name in event_names(collection, op))


async def run_filters(uow: Any, collection: str, op: str, data: dict[str, Any]) -> dict[str, Any]:
    """Both filters of the event, in order; returns the (possibly replaced or changed) payload."""
    for name in event_names(collection, op):
        result = await uow.filter(name, data)
        if isinstance(result, dict):
            data = result
    return data


# Keys of an item record that are not fields a write changes (the server keeps them).
NOT_CHANGES = frozenset({"id", "createdAt", "updatedAt", "userCreated", "userUpdated"})


def changed_fields(data: dict[str, Any]) -> list[str] | None:
    """The names of the fields whose value differs between ``before`` and ``after`` (content,
    ``status``, ``sort``); None for a delete."""
    after = data.get("after")
    if not isinstance(after, dict):
        return None
    before = data.get("before") if isinstance(data.get("before"), dict) else {}
    return sorted(k for k in {*before, *after} - NOT_CHANGES if before.get(k) != after.get(k))


def queue_actions(uow: Any, collection: str, op: str, data: dict[str, Any]) -> None:
    """Both actions of the event, released after commit, and its durable event, written now."""
    cause = data.get("cause")
    uow.emit(f"items.{op}", collection=collection, item_id=data.get("id"), fields=changed_fields(data),
             cause=f"onDelete:{cause.get('collection')}:{cause.get('id')}" if isinstance(cause, dict) else None)
    for name in event_names(collection, op):
        uow.action(name, data)
