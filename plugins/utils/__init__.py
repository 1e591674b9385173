"""utils: health, version, metrics, display templates and JSONata testing.

Owns no tables. Routes:

- ``GET /utils/health`` (public): the built-in checks ``database``, ``cache``, ``storage``,
  ``search`` (FTS5 on SQLite, tsvector on PostgreSQL) and ``queue``, plus every check plugins
  register through ``register_health_checks``, run concurrently with a 3 s timeout each; 503
  ``SERVICE_UNAVAILABLE`` with the report under ``extensions.health`` when one fails.
- ``GET /utils/version`` (public): name, version, API version, Python version.
- ``GET /metrics`` and ``GET /api/v1/metrics``: the app's Prometheus registry, for a container
  deployment's scraper: with ``SVC_METRICS_TOKEN`` only to that token (the route skips the
  authenticate chain and checks it); without one, to anyone only where ``SVC_METRICS_PUBLIC`` is
  on or ``SVC_ENV=development``, and 404 otherwise (never anonymous in production by default).
- ``POST /utils/render-template`` (bearer): display templates (``{{ a.b }}``, a few filters) in
  jinja2's sandbox; statements, calls and unknown filters are refused before rendering.
- ``POST /utils/jsonata/test`` (bearer): one JSONata evaluation in a child process, killed after
  ``SVC_JSONATA_TIMEOUT_MS``.

Modules: ``health`` (checks), ``templates`` (template checking and rendering),
``jsonata_runner`` (the parent side) and ``jsonata_child`` (the child script), ``service``
(version, metrics), ``routes``, ``schemas`` (OpenAPI).

Hooks: register_settings (``SVC_METRICS_TOKEN``, ``SVC_METRICS_PUBLIC``), register_routes, register_openapi (the
``metricsToken`` security scheme), startup (records the start time for ``uptimeSeconds``).
Events: none.
"""
