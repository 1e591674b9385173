"""What every call of the items data path starts from: the collection, the transaction or the
reader it runs on, the write's cause, and the context server code acts in.

Used by the façade (``plugins/items/service.py``) and by every floor below it (``read/``,
``write/``, ``history/``, ``search/``), so none of them reaches up to the façade for them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.core.records import item_record
from plugins.items.errors import collection_not_found
from plugins.schema.api import get_schema

# ``<kind>:<id>``: what made a write happen, recorded on its revision (``causedBy``).
CAUSE = re.compile(r"^[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9._:@/+=-]{1,160}$")
# Causes the items plugin gives its own updates (revisions.py): they tag the one item's
# revision, so writes that join the unit of work later (a filter's) do not inherit them.
OWN_CAUSES = ("revert", "promote")



def default_status(coll: Any) -> str:
    """``draft`` where a workflow decides publication (editorial or a status field), else
    ``published`` (docs/decisions/items-crud.md)."""
    return "draft" if coll.editorial_workflow or coll.status_field else "published"


async def schema_and_collection(ctx: Any, name: str) -> tuple[Any, Any]:
    """The site's schema and its live collection ``name`` (404 ``NOT_FOUND`` otherwise)."""
    snap = await get_schema(ctx.kernel, ctx.site_id)
    coll = snap.collection(name) if isinstance(name, str) else None
    if coll is None:
        raise collection_not_found(str(name))
    return snap, coll


def check_cause(cause: Any) -> str | None:
    """A write cause as given (``None``: none), 400 ``VALIDATION_FAILED`` unless ``<kind>:<id>``."""
    if cause is not None and (not isinstance(cause, str) or not CAUSE.match(cause)):
        raise ApiError.validation("A write's cause must look like '<kind>:<id>' (e.g. 'release:42')",
                                  path=["cause"])
    return cause


def same_site(ctx: Any, uow: Any) -> Any:
    """``uow`` if it is bound to ``ctx``'s site: a unit of work of another site would run one
    site's checks against the other's rows."""
    if uow is not None and uow.site_id != ctx.site_id:
        raise ApiError.validation("The unit of work belongs to another site than the call", path=["uow"])
    return uow


@contextlib.asynccontextmanager
async def transaction(ctx: Any, uow: Any, cause: str | None = None) -> AsyncIterator[Any]:
    """The caller's ``uow`` or a new one, as a view acting for ``ctx.principal`` with ``cause``
    (a filter may pass the request's unit of work while acting as another principal)."""
    async with contextlib.AsyncExitStack() as stack:
        # inline: an item write's statements are short and by key (Database.begin)
        u = same_site(ctx, uow) or await stack.enter_async_context(ctx.unit_of_work(inline=True))
        inherited = getattr(u, "cause", None) or ""
        own = cause is None and inherited.partition(":")[0] in OWN_CAUSES
        if cause is not None or own or u.principal is not ctx.principal:
            u = u.acting(ctx.principal, cause=check_cause(cause))
            if own:
                u.cause = None
        yield u


@contextlib.asynccontextmanager
async def reading(ctx: Any, uow: Any = None) -> AsyncIterator[Any]:
    """A site-scoped ``db`` for reads: the unit of work's (its uncommitted writes included)
    when one is given, else a plain connection."""
    if same_site(ctx, uow) is not None:
        yield uow.db
        return
    async with ctx.reader() as db:
        yield db


def dialect_of(ctx: Any) -> str:
    return ctx.kernel.db.dialect


def acting_context(kernel: Any, site_id: str, principal: Any, request_id: str = "internal") -> Any:
    """A ``RequestContext`` for server code that acts without a request (jobs, releases, flows):
    the calls then check ``principal``'s permissions like any caller's."""
    from kernel.core.context import RequestContext

    return RequestContext(kernel=kernel, request_id=request_id, site_id=site_id, principal=principal)


def item_of(row: Any) -> dict[str, Any]:
    """A row as an unmasked item (for server code such as releases and revisions)."""
    return item_record(row)
