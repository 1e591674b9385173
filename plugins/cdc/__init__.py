"""cdc: the change feed over the kernel's durable event log: pull, subscriptions, signed webhooks.

Tables: ``svc_cdc_subscriptions`` and ``svc_cdc_deliveries`` (``tables.py``, migration
``cdc_0001_subscriptions``). Routes:

- ``GET /cdc/events`` (bearer, capability ``cdc:subscribe``; admin implies it): the site's
  events after ``cursor``, keyset-paginated, filtered by ``collections`` and ``operations``, at
  most ``limit`` (500); ``wait`` (at most 25 s) long-polls, woken by the kernel's
  ``events.committed`` live topic. 400 for a malformed cursor, 410 ``CURSOR_EXPIRED``.
- ``/cdc/subscriptions`` and ``/cdc/subscriptions/{id}`` (site admin): CRUD with lag; pause and
  resume by PATCH; ``…/replay`` (audited), ``…/dispatch`` (202), ``…/deliveries``; ``…/ack``
  (capability ``cdc:subscribe``, forward only: 409 ``ACK_REGRESSION``).

Every ``/cdc`` route refuses frontend-realm callers (``guard.py``).

Modules: ``guard``, ``feed`` (the pull parameters and long poll), ``subscriptions`` (bodies,
records, the state table), ``webhooks`` (the kernel consumer group ``cdc.webhook``: signing,
posting, the retry schedule, dead), ``upkeep`` (the hourly job: stale marking, delivery-log
retention), ``config_section`` (the manifest's ``webhooks``), ``routes``,
``routes_subscriptions``, ``schemas``.

Hooks: register_settings, register_rate_limits (bucket ``cdc``),
register_error_codes (``CURSOR_EXPIRED``, ``ACK_REGRESSION``), register_routes,
register_event_consumers (the ``cdc.webhook`` group), register_jobs (``cdc.upkeep``),
config_sections (``webhooks``), shutdown (closes the delivery client). Audit actions:
``cdc.subscription.create|update|delete|replay``.
"""
