"""The HTTP face of items: Falcon resources, query parameters, OpenAPI schemas.

``routes`` (``/items/...``), ``routes_history`` (revisions, versions, pins), ``routes_search``
(``GET /search``), ``params`` (HTTP query -> ``query.ListQuery``), ``openapi`` and
``openapi_history`` (schemas of the bodies). Everything here goes through ``plugins.items.api``.
"""
