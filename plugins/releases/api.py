"""What other plugins may use of releases (declare ``requires = ("releases",)``).

``await publish(ctx, release_id)``: publish a release now exactly as ``POST
/releases/:id/publish`` does, as ``ctx.principal`` (a studio member of ``ctx.site_id``; 401/403
otherwise): ``{ release, status, outcomes }``; 404, 409 ``ALREADY_PUBLISHED``, 422
``EMPTY_RELEASE``; blocked items are outcomes, not errors.

``await rollback(ctx, release_id, force=False)``: as ``POST /releases/:id/rollback``: ``{ release,
status, outcomes }``; 404, 409 ``RELEASE_NOT_PUBLISHED``, 409 ``ROLLBACK_BLOCKED`` (an item edited
since the publish is a blocker, ``CHANGED_SINCE_PUBLISH``, unless ``force``).
"""

from __future__ import annotations

from typing import Any

from plugins.releases import service
from plugins.releases.publisher import ReleasePublisher
from plugins.releases.rollback import rollback as _rollback


async def publish(ctx: Any, release_id: str) -> dict[str, Any]:
    """Publish ``release_id`` of ``ctx``'s site as ``ctx.principal`` (the REST route's path)."""
    site_id = await service.require_member(ctx)
    return await ReleasePublisher(ctx.kernel, site_id, ctx.principal, release_id, ctx.request_id).publish()


async def rollback(ctx: Any, release_id: str, *, force: bool = False) -> dict[str, Any]:
    """Roll ``release_id`` of ``ctx``'s site back as ``ctx.principal`` (the REST route's path):
    every item it published returns to its revision and status before it, in one transaction;
    an item edited since the publish blocks it (``CHANGED_SINCE_PUBLISH``) unless ``force``."""
    site_id = await service.require_member(ctx)
    return await _rollback(ctx.kernel, site_id, ctx.principal, release_id, ctx.request_id, force=force)


__all__ = ["publish", "rollback"]
