"""realtime: the realtime WebSocket channel, notifications and web push.

Owns: ``POST /realtime/ticket`` and ``/realtime/audience-ticket`` (one-minute single-use
tickets, stored hashed), ``GET /realtime?ticket=`` (the WebSocket: subscribe frames with
filters over collection/action/itemId, signal-only ``event`` frames, ``notification`` frames,
pings, a per-site connection limit counted in Redis), notifications (``api.notify``,
``GET /notifications``, ``PATCH /notifications/:id``), and web push (VAPID keys from settings,
``/push/vapid-public-key``, ``/push/status``, ``/push/test``, ``/push/subscriptions``;
``svc push keygen``).

Hooks: register_settings, register_error_codes, register_rate_limits,
register_routes, register_event_handlers (the filter ``realtime.notify``), authenticate_ticket, register_jobs, register_commands, startup, shutdown.
Events: reads the items plugin's live topics ``items.<collection>`` (one per committed write);
publishes the live topics ``realtime.notification`` (the site's) and
``realtime.notification.<user id>`` (one recipient's) of each site. Jobs: ``realtime.push_fanout``,
``realtime.push_send``.

Layout: tickets.py (mint, redeem), channel.py (the socket), frames.py (client frames and
filters), notifications.py,
push.py (VAPID, subscriptions, sending), routes.py, schemas.py, tables.py, api.py.
"""
