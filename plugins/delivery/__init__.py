"""delivery: public, cacheable reads of a site's content: pages, item lists, menus, llms.txt.

No tables. Routes (all public; the Authorization header is not authenticated here, every read
is the site's **public role** through the items API, so its permissions, field masks, status,
drafts and soft delete apply exactly as on ``/items``):

- ``GET /deliver/page/{slug}`` (site from ``X-Svc-Site``, subdomain or custom domain) and
  ``GET /deliver/page/{site_id}/{slug}``: the ``pages`` item with that ``slug`` and its
  ``sections`` hydrated in one answer (``hydrate.py``).
- ``GET /deliver/items/{collection}``: the public item list with the query language.
- ``GET /deliver/menu/{key}``: the public setting ``menu.<key>`` (this plugin declares the
  ``menu.`` prefix through the settings plugin's ``register_setting_keys``).
- ``GET /deliver/llms.txt/{site_id}``: a plain-text index of the public pages (llms.txt).

HTTP caching (``caching.py``): a weak ETag, the fingerprint of the site id and its content
version (``version.py``: the head of the site's durable event log plus a digest of the public
role's rules, kept in the bounded site cache ``delivery_version`` and dropped on every item,
schema, file or access change through the bus, which fans out to every worker with Redis), so
``If-None-Match`` answers 304 before any hydration and without a database query.
``Cache-Control: public, s-maxage=SVC_DELIVER_SMAXAGE, stale-while-revalidate=SVC_DELIVER_SWR``
and ``Vary: X-Svc-Site``; ``private, no-store`` when the request carries ``Authorization``;
``no-store`` on every error.

Hooks: register_settings, register_site_caches (``delivery_version``), register_event_handlers,
register_middleware (errors never cached), register_rate_limits (bucket ``deliver``, per IP), register_setting_keys (``menu.``),
register_routes.
"""
