"""cdc: the change feed, read by pull (``GET /cdc/events``) over the kernel's durable event log.

Owns no tables yet. Routes:

- ``GET /cdc/events`` (bearer, capability ``cdc:subscribe``; admin implies it): the site's
  events after ``cursor``, keyset-paginated (``kernel.events.read_after``), filtered by
  ``collections`` and ``operations``, at most ``limit`` (500); ``wait`` (at most 25 s) long-polls
  until an event arrives, woken by the kernel's ``events.committed`` live topic. Answers
  ``{ data: [event], meta: { nextCursor, hasMore } }``; 400 for a malformed cursor, 410
  ``CURSOR_EXPIRED`` (``extensions.earliestCursor``) for one past retention.

Every ``/cdc`` route refuses frontend-realm callers (the ``subscriber`` role, or a token whose
``realm`` claim is ``frontend``) with 403 ``PERMISSION_DENIED`` (``guard.py``).

Modules: ``guard`` (realm and capability), ``feed`` (parameters, the long poll), ``routes``,
``schemas`` (OpenAPI).

Hooks: register_settings (``SVC_RATE_LIMIT_CDC``), register_rate_limits (bucket ``cdc``),
register_error_codes (``CURSOR_EXPIRED``), register_routes. Events: none of its own.

Not built yet (issue 13): subscriptions, webhooks, replay, the config manifest section.
"""
