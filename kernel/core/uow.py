"""The unit of work: one transaction; durable events written in it, actions released after commit."""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from kernel.events.log import event_row
from kernel.events.log import write as write_events
from kernel.messaging.bus import EventContext
from kernel.tenancy.scope import SiteDB

if TYPE_CHECKING:
    from kernel.core.context import Kernel

log = logging.getLogger("svc.uow")


class UnitOfWork:
    """``async with kernel.unit_of_work(site_id, principal) as uow:`` then ``uow.db`` (site-scoped)
    and ``await uow.filter(...)`` / ``uow.action(...)``.

    Filters run now, inside the transaction, and may veto by raising (everything rolls back).
    Durable events (``uow.emit``) are inserted in the transaction just before it commits.
    Actions queue and run after commit; on rollback they are dropped. Nothing that runs after
    the commit can fail the write: its exceptions are logged, never raised.
    """

    def __init__(self, kernel: Kernel, site_id: str | None, principal: Any = None,
                 request_id: str | None = None, cause: str | None = None, inline: bool = False) -> None:
        self.kernel = kernel
        self.inline = inline  # short statements by key: Database.begin(inline=True)
        self.site_id = site_id
        self.principal = principal
        self.request_id = request_id
        self.cause = cause  # what caused the writes (``release:<id>``), stamped on their events
        self.conn: AsyncConnection | None = None
        self._cm: Any = None
        self._actions: list[tuple[str, Any]] = []
        self._after_commit: list[Any] = []
        self._events: list[dict[str, Any]] = []
        # How many events each flush wrote; a list, like the others, so that an ``acting`` view
        # flushing in this transaction still has the commit wake the event dispatcher.
        self._written: list[int] = []
        self._kinds: set[tuple[str, str | None]] = set()  # (type, collection) of the written events
        # What one step of the transaction learned for a later one (a row read with no pin, so
        # the update's pin check needs no query); shared with ``acting`` views, gone with it.
        self.notes: dict[Any, Any] = {}

    async def __aenter__(self) -> UnitOfWork:
        self._cm = self.kernel.db.begin(inline=self.inline)
        self.conn = await self._cm.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if exc_type is None:
            try:
                await self.flush_events()
            except BaseException as error:  # the events could not be written: roll back everything
                await self._cm.__aexit__(type(error), error, error.__traceback__)
                raise
        await self._cm.__aexit__(exc_type, exc, tb)
        if exc_type is None:
            await self._after_commit_steps()

    async def _after_commit_steps(self) -> None:
        # The steps' Redis writes (the committed signal, live topics, the bus fan-out, cache
        # bumps) go as one pipeline; the writer answers once Redis has them.
        writes = self.kernel.redis_writes
        async with writes.held() if writes is not None else contextlib.nullcontext():
            await self._after_commit_run()

    async def _after_commit_run(self) -> None:
        # The data is committed: from here on a failure is logged, never raised to the writer
        # (who would otherwise see an error for a write that happened).
        if self._written:
            try:
                self.kernel.events.committed(self.site_id, self._kinds)
            except Exception:  # noqa: BLE001
                log.exception("could not wake the event dispatcher")
            try:
                await self.kernel.events.signal(self.site_id)
            except Exception:  # noqa: BLE001
                log.exception("could not signal the committed events on the live topic")
        ctx = self.event_context(in_transaction=False)
        for fn in self._after_commit:
            try:
                result = fn()
                if hasattr(result, "__await__"):
                    await result
            except Exception:  # noqa: BLE001
                log.exception("after-commit callback %r failed (the write is committed)", fn)
        for event, payload in self._actions:
            try:
                await self.kernel.bus.action(event, payload, ctx)
            except Exception:  # noqa: BLE001
                log.exception("after-commit action %s failed (the write is committed)", event)

    @property
    def db(self) -> SiteDB:
        """The site-scoped query helper bound to this transaction."""
        if self.site_id is None:
            raise RuntimeError("this unit of work is not bound to a site")
        assert self.conn is not None
        return SiteDB(self.site_id, self.conn)

    def event_context(self, in_transaction: bool = True) -> EventContext:
        return EventContext(site_id=self.site_id, principal=self.principal, kernel=self.kernel,
                            conn=self.conn if in_transaction else None, request_id=self.request_id,
                            uow=self if in_transaction else None, cause=self.cause)

    async def filter(self, event: str, payload: Any) -> Any:
        """Run the bus filters of ``event`` inside this transaction."""
        return await self.kernel.bus.filter(event, payload, self.event_context())

    def action(self, event: str, payload: Any) -> None:
        """Queue an action event for after commit."""
        self._actions.append((event, payload))

    async def enqueue(self, job: str, /, **options_and_args: Any) -> str | None:
        """Queue background job ``job`` in this transaction: it exists only if the write commits
        (``kernel.jobs.enqueue(job, uow=self, ...)``; same options and arguments)."""
        return await self.kernel.jobs.enqueue(job, uow=self, **options_and_args)

    def emit(self, type: str, *, collection: str | None = None, item_id: str | None = None,
             fields: Iterable[str] | None = None, cause: str | None = None) -> None:
        """Record a durable event (``<resource>.<operation>``: ``items.update``) in this
        transaction: it commits with the data or not at all. Thin: identifiers, the operation
        and the changed field names, never values. The request id, the acting user and the
        cause (``cause``, else ``uow.cause``) are stamped on it. ValueError on a bad type."""
        if self.site_id is None:
            raise RuntimeError("events belong to a site: this unit of work has none")
        self._events.append(event_row(
            self.site_id, type, collection=collection, item_id=item_id, fields=fields,
            request_id=self.request_id, actor=getattr(self.principal, "user_id", None),
            cause=cause if cause is not None else self.cause))

    async def flush_events(self) -> None:
        """Insert the events emitted so far (the commit does it; call it to write them earlier)."""
        if self._events:
            # Emptied in place: an ``acting`` view shares this list with its unit of work.
            rows = list(self._events)
            self._events.clear()
            assert self.conn is not None
            await write_events(self.conn, rows)
            self._written.append(len(rows))
            self._kinds.update((row["type"], row["collection"]) for row in rows)

    def after_commit(self, fn: Any) -> None:
        """Run ``fn()`` (sync or async) after a successful commit, before the actions."""
        self._after_commit.append(fn)

    def acting(self, principal: Any = None, *, cause: str | None = None) -> UnitOfWork:
        """A view of this open transaction for writes made in ``principal``'s name and/or with
        ``cause`` (defaults: this one's): the same connection, the same queued actions and
        after-commit callbacks, so everything commits or rolls back together. A filter writing
        as its plugin's principal, or a release publishing with ``cause="release:<id>"``, uses
        it. The view is never entered or exited itself: the unit of work that opened the
        transaction ends it."""
        view = copy.copy(self)
        if principal is not None:
            view.principal = principal
        if cause is not None:
            view.cause = cause
        return view
