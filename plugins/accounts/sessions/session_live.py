"""Whether the session behind an access token is still live (the ``sid`` claim).

An access token names its session (the refresh family, ``sid``). A revoked session (logout,
``/me/sessions``, an admin's revoke, a refresh token's reuse) ends its access tokens at once, not
when they expire: a stolen token is no good after its owner logs out (the class of Payload's
CVE-2025-4643). The answer is cached per process, one entry per session, for ``ttl`` seconds, and
every revocation queues ``sessions.changed`` after its commit, which drops the cache in this
process and in every other (the bus's fan-out), so a request does not pay a query each time.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from kernel.cache.sitecache import SiteCacheSpec
from kernel.db.meta import now_utc
from kernel.messaging.bus import EventContext
from plugins.accounts.tables import refresh_tokens

SESSIONS_CHANGED = "sessions.changed"
INSTANCE = ""  # sessions are looked up by their id alone: one partition
SESSION_CACHE = SiteCacheSpec(
    "sessions", max_entries=20_000, ttl=5.0, invalidate_on=(SESSIONS_CHANGED,),
    doc="Whether the session (sid) of an access token is live; dropped on sessions.changed.")


async def session_live(kernel: Any, user_id: str, session_id: str) -> bool:
    """Whether ``session_id`` of ``user_id`` still holds a live refresh token."""
    T = refresh_tokens.c  # noqa: N806 - a table's columns

    async def load(_stale: Any) -> bool:
        async with kernel.db.connect() as conn:
            found = (await conn.execute(select(T.id).where(
                T.family_id == session_id, T.user_id == user_id, T.revoked_at.is_(None),
                T.rotated_at.is_(None), T.expires_at > now_utc()).limit(1))).first()
        return found is not None

    return bool(await kernel.site_caches[SESSION_CACHE.name].get_or_load(INSTANCE, (user_id, session_id), load))


def sessions_changed(uow: Any) -> None:
    """Queue ``sessions.changed`` for after ``uow`` commits (a session was revoked in it)."""
    uow.action(SESSIONS_CHANGED, {})


async def announce_sessions_changed(kernel: Any) -> None:
    """``sessions.changed`` now, after a revocation committed outside a unit of work."""
    await kernel.bus.action(SESSIONS_CHANGED, {}, EventContext(site_id=None, kernel=kernel))
