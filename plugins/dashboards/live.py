"""-- more43: the change events of dashboard writes (docs/dashboards.md, Events).

Each committed write of a dashboard or of one of its panels records a durable event (as item
writes do: ``uow.emit``, identifiers and changed names only) and, after commit, one live signal on
the site's topic ``dashboards.<dashboard id>``, ``{ collection: "svc_dashboards", action,
itemId: <dashboard id> }``. The realtime channel sends it as an event frame to the sockets that
subscribed to ``svc_dashboards`` and may read dashboards (the studio's open dashboard redraws
its panels on it). Topics are lossy like every topic; the durable event is the record.

Events: ``dashboards.create``, ``dashboards.update`` (``fields``: the changed dashboard fields,
or ``panels`` for a panel added, changed, moved or removed), ``dashboards.delete``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

COLLECTION = "svc_dashboards"


def topic(dashboard_id: str) -> str:
    return f"dashboards.{dashboard_id}"


def changed(uow: Any, action: str, dashboard_id: str, fields: Iterable[str] | None = None) -> None:
    """Record the write's event in ``uow`` and send its live signal once it commits."""
    uow.emit(f"dashboards.{action}", collection=COLLECTION, item_id=dashboard_id,
             fields=None if fields is None else sorted(fields))
    kernel, site_id = uow.kernel, uow.site_id

    async def signal() -> None:
        await kernel.topics.publish(site_id, topic(dashboard_id),
                                    {"collection": COLLECTION, "action": action, "itemId": str(dashboard_id)})

    uow.after_commit(signal)
