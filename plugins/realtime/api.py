"""What other plugins may import from realtime (declare ``requires = ("realtime",)``).

- ``notify(kernel, site_id, kind=..., title=..., severity="info", body=None, deep_link=None,
  entity_id=None, recipient=None, uow=None)``: store a notification ``{ id, kind, severity,
  title, body, deepLink, entityId, ts }``; after commit it is sent as the ``notification`` frame
  and by web push. Without ``recipient`` it is the site's: every connection of the site (studio
  and audience) and every studio push subscription. With a user id it is that user's alone:
  their connections, their ``GET /notifications``, their push subscriptions. Pass ``uow`` to
  write it in your transaction (nothing is sent if it rolls back). Returns the record.
- ``notify_each(kernel, site_id, recipients, kind=..., ..., uow=None)``: one such notification
  per user id of ``recipients`` (none for an empty list); their records.
- ``mark_handled(kernel, site_id, notification_id, handled=True)``.
- ``prune_handled(kernel, site_id, older_than)``: delete handled notifications older than the
  ``timedelta``; returns the count (for the retention job).
"""

from __future__ import annotations

from plugins.realtime.notifications import create as notify
from plugins.realtime.notifications import create_for as notify_each
from plugins.realtime.notifications import mark_handled, prune_handled

__all__ = ["mark_handled", "notify", "notify_each", "prune_handled"]
