"""Access decisions for items: ``kernel.access.decide`` per (collection, action).

Admin access (role, policy or instance admin) short-circuits inside ``kernel.access``. A
missing permission is 403 ``PERMISSION_DENIED``, also for anonymous callers, who act with
the site's public role (Directus answers the public role the same way). The check comes
before the collection lookup, so a caller without permission cannot probe which
collections exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from kernel.base import sandbox
from kernel.policy.access import VARIABLES, AccessSnapshot, Decision, substitute_variables, uses_variables
from plugins.items.errors import action_denied

ALLOWED = Decision(True)
DENIED = Decision(False)


async def decide(ctx: Any, collection: str, action: str) -> Decision:
    """The caller's decision for ``action`` on ``collection`` (never raises). Inside an uploaded
    extension's code, a collection the extension was not granted (``items:<name>``,
    kernel.base.sandbox) is refused whoever the principal is."""
    if not sandbox.collection_allowed(collection):
        return DENIED
    access = ctx.kernel.access
    if access is None:  # an app built without the access service: nothing is restricted
        return ALLOWED
    return await access.decide(ctx.principal, ctx.site_id, collection, action)


async def require(ctx: Any, collection: str, action: str) -> Decision:
    """The decision for ``action``, or 403 when it is not allowed."""
    decision = await decide(ctx, collection, action)
    if not decision.allowed:
        raise action_denied(collection, action)
    return decision


def caller_may(*actions: str, denied_as: str | None = None) -> Callable[[Any], Awaitable[None]]:
    """A ``Route.caller`` check: the caller holds one of ``actions`` on the collection the path
    names (``ctx.path_params["collection"]``), or the 403 the service would answer, before the
    route reads the body. The service checks again for its other callers."""
    async def check(ctx: Any) -> None:
        collection = str(ctx.path_params.get("collection", ""))
        for action in actions:
            if (await decide(ctx, collection, action)).allowed:
                return
        raise action_denied(collection, denied_as or actions[0])

    return check


def readable(decision: Decision) -> frozenset[str] | None:
    """Field names the caller may read (``None``: all); nothing when reading is not allowed."""
    if not decision.allowed:
        return frozenset()
    return decision.fields


class ReadAccess:
    """The caller's ``read`` decisions in one site, one per collection, asked once per request.

    ``can_filter(collection, field)`` (as its ``can_read``) and ``row_filter_for(collection)`` are
    what the query compiler takes (``id`` is readable wherever the collection is); ``can_read``
    is what a projection may show. For caches: ``owner`` is the
    object the decisions come from (``None`` for admins, who all decide alike; else the access
    snapshot ``kernel.access`` caches per site and principal, to be compared by identity) and
    ``cacheable()`` is false when a read rule uses ``$NOW``, whose value changes by the second.
    """

    def __init__(self, snapshot: Any, principal: Any) -> None:
        admin = snapshot is None or snapshot.admin
        self.snapshot = None if admin else snapshot
        self.principal = principal
        self._decisions: dict[str, Decision] = {}
        # What the query's variables stand for, admins included ($CURRENT_ROLE is theirs too).
        self._variables = snapshot if snapshot is not None else AccessSnapshot(
            site_id="", role_id=getattr(principal, "role_id", None))

    def bind(self, query: Any) -> tuple[Any, bool]:
        """``query`` with ``$CURRENT_USER``, ``$CURRENT_ROLE``, ``$CURRENT_ROLES`` and ``$NOW`` in its
        ``filter`` and ``deep`` filters replaced by the caller's values, as in permission
        conditions (``kernel.policy.access.substitute_variables``), and whether it read ``$NOW`` (a plan
        that must not be kept). Unchanged when it names none."""
        if not _deep_uses(query, VARIABLES):
            return query, False
        return self._bound(query), _deep_uses(query, ("$NOW",))

    def _bound(self, query: Any) -> Any:
        tree = None if query.filter is None else substitute_variables(query.filter, self.principal, self._variables)
        deep = {name: self._bound(sub) for name, sub in query.deep.items()}
        return replace(query, filter=tree, deep=deep)

    @property
    def owner(self) -> Any:
        return self.snapshot

    def cacheable(self) -> bool:
        rules = self.snapshot.rules if self.snapshot is not None else ()
        return not any(r.action == "read" and r.conditions and "$NOW" in repr(r.conditions) for r in rules)

    def decision(self, collection: str) -> Decision:
        found = self._decisions.get(collection)
        if found is None:
            snap = self.snapshot
            found = ALLOWED if snap is None else snap.decide(collection, "read", self.principal)
            if not sandbox.collection_allowed(collection):  # related collections an extension reads
                found = DENIED
            self._decisions[collection] = found
        return found

    def can_read(self, collection: str, name: str) -> bool:
        """Whether ``name`` may be shown on some row (each row then shows what it grants)."""
        decision = self.decision(collection)
        return decision.allowed and (name == "id" or decision.field_allowed(name))

    def can_filter(self, collection: str, name: str) -> bool:
        """Whether ``name`` may be named in a predicate (filter, sort, aggregate, groupBy, search):
        only where it is granted on every row the caller sees, so that matching on it cannot
        reveal its values on rows where it is hidden (the pairing of fields with conditions)."""
        decision = self.decision(collection)
        return decision.allowed and (name == "id" or decision.everywhere(name))

    def row_filter_for(self, collection: str) -> Any:
        return self.decision(collection).row_filter


def _deep_uses(query: Any, names: tuple[str, ...]) -> bool:
    """Whether a list query's ``filter`` or any of its ``deep`` filters holds one of ``names``."""
    return uses_variables(query.filter, names) or any(_deep_uses(sub, names) for sub in query.deep.values())


async def read_access(ctx: Any) -> ReadAccess:
    """The caller's ``ReadAccess`` (the kernel's access snapshot is cached: no query)."""
    access = ctx.kernel.access
    if access is None:
        return ReadAccess(None, ctx.principal)
    return ReadAccess(await access.snapshot(ctx.principal, ctx.site_id), ctx.principal)
