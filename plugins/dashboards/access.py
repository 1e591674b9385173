"""Who may manage dashboards: permission rules on the system collection ``svc_dashboards``.

Dashboards are site content like a collection's items, so they are governed the same way,
through the access plugin's policies (Directus governs ``directus_dashboards`` and
``directus_panels`` by permissions too): a rule ``{ collection: "svc_dashboards", action }``
with ``read`` lists and shows dashboards and their panels and runs panels (the data itself is
bounded by the caller's permissions on the panel's collection), ``create`` creates dashboards,
``update`` changes a dashboard and adds, changes, moves and removes its panels, ``delete``
deletes dashboards. Admin access grants all. ``svc_`` names are reserved, so no content
collection can take this one; a ``*`` rule covers it as it covers every collection.

Rules with ``conditions`` are not supported on ``svc_dashboards``: a decision that needs one
(no unconditional rule grants the action) is refused, never widened to every dashboard.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError

COLLECTION = "svc_dashboards"


async def require(ctx: Any, action: str) -> str:
    """The request's site, when the caller may ``action`` dashboards there (else 403)."""
    site_id = ctx.require_site()
    decision = await ctx.kernel.access.decide(ctx.principal, site_id, COLLECTION, action)
    if not decision.allowed or decision.row_filter is not None:
        raise ApiError.forbidden(f"This needs the {action} permission on {COLLECTION}", reason="no_permission")
    return site_id
