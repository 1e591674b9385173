"""MCP sessions' lifetime, apart from the MCP server (``plugins.ai.mcp.mcp``), which imports the MCP
SDK and pydantic (about 20 MB): the hourly retention job purges idle sessions in whatever
process runs jobs, and must not load the SDK there."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.db.meta import now_utc
from kernel.policy.privacy import delete_in_batches
from plugins.ai.tables import mcp_sessions

SESSION_IDLE = dt.timedelta(days=1)  # a session unused this long is gone


async def purge_sessions(kernel: Any) -> int:
    """Sessions idle for ``SESSION_IDLE``, across sites, in bounded batches; how many went."""
    return await delete_in_batches(kernel, mcp_sessions, mcp_sessions.c.last_used_at < now_utc() - SESSION_IDLE)
