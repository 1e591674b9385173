"""What other plugins may import from realtime (declare ``requires = ("realtime",)``).

- ``notify(kernel, site_id, kind=..., title=..., severity="info", body=None, deep_link=None,
  entity_id=None, uow=None)``: store a notification ``{ id, kind, severity, title, body,
  deepLink, entityId, ts }``; after commit it is broadcast as the ``notification`` frame to
  every connection of the site (studio and audience) and sent by web push. Pass ``uow`` to write it in your
  transaction (nothing is sent if it rolls back). Returns the record.
- ``mark_handled(kernel, site_id, notification_id, handled=True)``.
- ``prune_handled(kernel, site_id, older_than)``: delete handled notifications older than the
  ``timedelta``; returns the count (for the retention job).
"""

from __future__ import annotations

from plugins.realtime.notifications import create as notify
from plugins.realtime.notifications import mark_handled, prune_handled

__all__ = ["mark_handled", "notify", "prune_handled"]
