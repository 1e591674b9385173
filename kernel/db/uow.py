"""The unit of work: one transaction; action events released only after it commits."""

from __future__ import annotations

import copy
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from kernel.bus import EventContext

if TYPE_CHECKING:
    from kernel.context import Kernel
    from kernel.tenancy.scope import SiteDB


class UnitOfWork:
    """``async with kernel.unit_of_work(site_id, principal) as uow:`` then ``uow.db`` (site-scoped)
    and ``await uow.filter(...)`` / ``uow.action(...)``.

    Filters run now, inside the transaction, and may veto by raising (everything rolls back).
    Actions queue and run after commit; on rollback they are dropped.
    """

    def __init__(self, kernel: Kernel, site_id: str | None, principal: Any = None,
                 request_id: str | None = None) -> None:
        self.kernel = kernel
        self.site_id = site_id
        self.principal = principal
        self.request_id = request_id
        self.conn: AsyncConnection | None = None
        self._cm: Any = None
        self._actions: list[tuple[str, Any]] = []
        self._after_commit: list[Any] = []
        # Why this transaction writes (``release:<id>``, ``flow-run:<id>``), set on a view by
        # ``acting``; None for a plain request.
        self.cause: str | None = None

    async def __aenter__(self) -> UnitOfWork:
        self._cm = self.kernel.db.begin()
        self.conn = await self._cm.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._cm.__aexit__(exc_type, exc, tb)
        if exc_type is None:
            ctx = self.event_context(in_transaction=False)
            for fn in self._after_commit:
                result = fn()
                if hasattr(result, "__await__"):
                    await result
            for event, payload in self._actions:
                await self.kernel.bus.action(event, payload, ctx)

    @property
    def db(self) -> SiteDB:
        """The site-scoped query helper bound to this transaction."""
        from kernel.tenancy.scope import SiteDB

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
