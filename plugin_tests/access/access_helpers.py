"""Helpers of the access tests: role ids and the audit trail. ``Calls``, ``make_member`` and the
second site come from svc's pytest plugin (``kernel.testing``)."""

from __future__ import annotations

from typing import Any

from plugins.access import api


async def role_id_of(svc_app: Any, site: str, role: str) -> str:
    """``role`` is a built-in key (admin, public, subscriber) or already a role id."""
    async with svc_app.kernel.db.connect() as conn:
        row = await api.role_by_system_key(conn, site, role)
    return row["id"] if row else role


async def audit_actions(svc_app: Any, site: str) -> list[tuple[str, str | None]]:
    """(action, target id) of the site's audit records, oldest first."""
    from kernel.policy.audit import list_entries

    async with svc_app.kernel.db.connect() as conn:
        entries, _ = await list_entries(conn, site, limit=500)
    return [(e["action"], e["target"]["id"]) for e in reversed(entries)]
