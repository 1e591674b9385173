"""The accounts plugin's retention target ``activity``: the traces of a user's sign-ins that
outlive their use. Sessions (refresh tokens) of the site that expired, were revoked or were
rotated before the horizon, and one-time tokens (verification, reset, invite) that expired or
were used before it, are deleted. Live sessions are never touched."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import and_, delete, or_

from kernel.policy.privacy import RetentionTarget, sites_holding
from plugins.accounts.tables import one_time_tokens, refresh_tokens

R, T = refresh_tokens.c, one_time_tokens.c


async def prune_activity(kernel: Any, site_id: str, before: dt.datetime) -> int:
    async with kernel.db.begin() as conn:
        # A family whose newest token is older than the horizon is over: its rotated tokens
        # (kept for reuse detection) go with it once it expired or was revoked.
        sessions = await conn.execute(delete(refresh_tokens).where(R.site_id == site_id, or_(
            R.expires_at < before, and_(R.revoked_at.is_not(None), R.revoked_at < before))))
        tokens = await conn.execute(delete(one_time_tokens).where(T.site_id == site_id, or_(
            T.expires_at < before, and_(T.used_at.is_not(None), T.used_at < before))))
    return int(sessions.rowcount or 0) + int(tokens.rowcount or 0)


async def pending_activity(kernel: Any, before: dt.datetime, site_ids: Any = None) -> set[str]:
    """The sites with a session or one-time token ``prune_activity`` would delete (two queries
    across sites)."""
    sessions = await sites_holding(kernel, refresh_tokens, or_(
        R.expires_at < before, and_(R.revoked_at.is_not(None), R.revoked_at < before)), site_ids=site_ids)
    tokens = await sites_holding(kernel, one_time_tokens, or_(
        T.expires_at < before, and_(T.used_at.is_not(None), T.used_at < before)), site_ids=site_ids)
    return sessions | tokens


TARGET = RetentionTarget("activity", 90, prune_activity,
                         "Ended sessions and spent one-time tokens of the site (sign-in activity).",
                         pending=pending_activity)
