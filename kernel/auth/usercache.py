"""The per-process cache of the identity behind an internal access token.

Every request with an internal JWT needs the user's status, token version and instance-admin
flag. ``USER_CACHE`` keeps that record per process for ``ttl`` seconds (a bounded ``SiteCache``
under the instance-wide partition ``INSTANCE``), keyed by ``(user id, token version)``: a token
of another version never reads an entry made for this one.

Whatever changes a user's status, token version, email or instance-admin flag, or deletes the
user, calls ``users_changed(uow, user_id)`` in its transaction: after commit the ``users.changed``
action drops the cache in this process and in every other: through Redis, or without it through
the node's broker, whose numbering makes another worker apply the drop before its next request
(``kernel.workers.fanout_gate.FanoutGate``). ``ttl`` bounds what a lost message leaves stale.
Memberships and roles are not held here: the ``access`` cache answers them and drops on
``access.changed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kernel.cache.sitecache import SiteCacheSpec

USERS_CHANGED = "users.changed"
INSTANCE = ""  # users are instance-wide: one partition
USER_CACHE = SiteCacheSpec(
    "users", max_entries=10_000, ttl=5.0, invalidate_on=(USERS_CHANGED,),
    doc="Identity behind an internal access token per (user, token version); dropped on users.changed.")


def users_changed(uow: Any, user_id: str) -> None:
    """Queue ``users.changed`` for after commit: every process drops its cached identities.

    The payload names the user (``userId``) but carries no ``siteId`` since a user is
    instance-wide, so the whole ``users`` cache is dropped (user changes are rare)."""
    uow.action(USERS_CHANGED, {"userId": user_id})


async def cached_user(kernel: Any, user_id: str, token_version: Any,
                      load: Callable[[], Awaitable[Any]]) -> Any:
    """The identity record of ``user_id`` for a token of ``token_version``, from the cache or
    ``load()`` (None, a missing user, is not stored)."""
    if not isinstance(user_id, str) or isinstance(token_version, bool) or not isinstance(token_version, int):
        return await load()

    async def loader(_stale: Any) -> Any:
        return await load()

    return await kernel.site_caches[USER_CACHE.name].get_or_load(INSTANCE, (user_id, token_version), loader)
