"""``GET /cdc/events``: the parameters, the read, and the long poll.

Operations map onto event types: ``create`` reads ``items.create``, ``collections.create``,
``fields.create`` and ``relations.create`` (likewise ``update`` and ``delete``). Without
``operations`` every type is read. ``collections`` keeps the events whose ``collection`` is one
of the names (item, collection, field and relation events all carry one).

A long poll (``wait`` > 0) subscribes to the kernel's ``events.committed`` topic of the site
before its first read, so an event committed after that read wakes it in any process (through
Redis when configured). It reads again on every signal, and every ``RECHECK_SECONDS`` in case a
signal was lost or the PostgreSQL horizon held an event back; it answers as soon as a page holds
an event, or with the empty page when the wait ends.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from kernel import ApiError
from kernel.events import COMMITTED_TOPIC, Cursor, EventPage

OPERATIONS = ("create", "update", "delete")
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
MAX_WAIT = 25.0
MAX_COLLECTIONS = 100
RECHECK_SECONDS = 2.0
_COLLECTION = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class FeedQuery:
    """The checked parameters of one pull."""

    cursor: Cursor | None
    types: tuple[str, ...]
    collections: tuple[str, ...]
    limit: int
    wait: float


def _csv(raw: str | None, name: str) -> list[str]:
    if raw is None:
        return []
    parts = [p.strip() for p in raw.split(",")]
    if not all(parts):
        raise ApiError.validation(f"'{name}' is a comma list without empty entries", path=[name])
    return parts


def _number(raw: str | None, name: str, default: float, maximum: float, *, integer: bool, minimum: float) -> float:
    if raw is None:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise ApiError.validation(f"'{name}' must be {kind}", path=[name]) from None
    if not (minimum <= value <= maximum):  # also refuses nan
        raise ApiError.validation(f"'{name}' must be between {minimum:g} and {maximum:g}", path=[name])
    return value


def types_for(operations: list[str]) -> tuple[str, ...]:
    """The event type patterns of ``operations``: each operation of every resource (items,
    schema, files, any plugin's), all types when empty."""
    return tuple(f"*.{op}" for op in operations)


def parse_query(params: dict[str, Any]) -> FeedQuery:
    """The query of ``GET /cdc/events``; 400 ``VALIDATION_FAILED`` with the parameter's path."""
    token = params.get("cursor")
    cursor = None
    if token is not None:
        try:
            cursor = Cursor.parse(token)
        except ValueError:
            raise ApiError.validation("'cursor' is not a cursor this feed gave out", path=["cursor"]) from None
    operations = _csv(params.get("operations"), "operations")
    unknown = [op for op in operations if op not in OPERATIONS]
    if unknown:
        raise ApiError.validation(f"'operations' takes {', '.join(OPERATIONS)}; not {', '.join(unknown)}",
                                  path=["operations"])
    collections = _csv(params.get("collections"), "collections")
    if len(collections) > MAX_COLLECTIONS or not all(_COLLECTION.match(c) for c in collections):
        raise ApiError.validation(f"'collections' takes at most {MAX_COLLECTIONS} collection names",
                                  path=["collections"])
    limit = int(_number(params.get("limit"), "limit", DEFAULT_LIMIT, MAX_LIMIT, integer=True, minimum=1))
    wait = _number(params.get("wait"), "wait", 0.0, MAX_WAIT, integer=False, minimum=0)
    return FeedQuery(cursor, types_for(sorted(set(operations), key=OPERATIONS.index)),
                     tuple(dict.fromkeys(collections)), limit, wait)


def expired(earliest: Cursor, path: str = "cursor") -> ApiError:
    """410 ``CURSOR_EXPIRED``: events after the position were pruned; resume from ``earliest``."""
    return ApiError(410, "CURSOR_EXPIRED", "Events after this position were pruned (retention); resume from "
                    "extensions.earliestCursor and resynchronise", path=[path],
                    extensions={"earliestCursor": str(earliest)})


async def start_cursor(kernel: Any, site_id: str, cursor: Cursor | None) -> Cursor:
    """Where to read from: ``cursor``, or the oldest retained position without one; 410
    ``CURSOR_EXPIRED`` (``extensions.earliestCursor``) when retention pruned events after it."""
    earliest = await kernel.events.earliest_cursor(site_id)
    if cursor is None:
        return earliest
    if cursor < earliest:
        raise expired(earliest)
    return cursor


async def pull(kernel: Any, site_id: str, query: FeedQuery) -> EventPage:
    """One page of the site's events after the query's cursor; waits up to ``query.wait``
    seconds for the first one when there is none yet."""
    cursor = await start_cursor(kernel, site_id, query.cursor)

    async def read(after: Cursor) -> EventPage:
        return await kernel.events.read_after(site_id, after, query.limit, types=query.types,
                                              collections=query.collections)

    if query.wait <= 0:
        return await read(cursor)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + query.wait
    # Subscribed before the first read: an event committed after that read signals us.
    async with kernel.topics.subscribe(site_id, COMMITTED_TOPIC, queue_size=1) as signals:
        while True:
            page = await read(cursor)
            if page.events:
                return page
            cursor = page.next_cursor  # filters move it past what they left out
            remaining = deadline - loop.time()
            if remaining <= 0:
                return page
            try:
                await signals.get(min(remaining, RECHECK_SECONDS))
            except TimeoutError:
                pass
            except StopAsyncIteration:  # the subscription ended: poll until the wait is over
                await asyncio.sleep(min(remaining, RECHECK_SECONDS))


def page_body(page: EventPage) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``data`` and ``meta`` of the answer."""
    return [e.to_dict() for e in page.events], {"nextCursor": str(page.next_cursor), "hasMore": page.has_more}
