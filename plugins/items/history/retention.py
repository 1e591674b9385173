"""The items plugin's retention target ``revisions`` (``register_retention_targets``): committed
revisions older than the horizon are deleted; staged (prepared, not yet committed) revisions
are kept, since a release still waits on them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.policy.privacy import RetentionTarget, prune_rows, rows_before
from plugins.items.tables import revisions


async def prune_revisions(kernel: Any, site_id: str, before: dt.datetime) -> int:
    return await prune_rows(kernel, site_id, revisions, revisions.c.staged.is_(False),
                            revisions.c.created_at < before, chunk=1000)


TARGET = RetentionTarget("revisions", 365, prune_revisions, "Item revisions (committed), by creation time.",
                         pending=rows_before(revisions, revisions.c.created_at, revisions.c.staged.is_(False)))
