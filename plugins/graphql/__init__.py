"""graphql: a GraphQL interface per site, generated from its collections (graphql-core).

Routes: ``POST /graphql`` (``{ query, variables, operationName }``); ``GET /graphql`` with
``Accept: text/event-stream`` streams a subscription (Server-Sent Events); in development
``GET /graphql`` serves the explorer (a self-contained page) or runs ``?query=``. In
production a plain GET is 404. Errors: HTTP 200 with ``{ data, errors }`` (``errors.py``).

Modules: ``names`` (the name-mapping rule), ``scalars`` (JSON, DateTime, ItemEvent),
``schema`` (the schema of a site's snapshot), ``selection`` (a selection as one items read),
``resolvers`` (every one calls ``plugins.items.api`` as the caller), ``guards`` (size,
operations, depth, cost), ``errors``, ``service`` (cached schema and documents, execution),
``subscriptions`` (``<collection>_events`` from the live topics), ``streams`` (the SSE
transport), ``routes``, ``explorer.html``.

Hooks: register_settings (``SVC_GQL_MAX_COST``, ``SVC_GQL_DEFAULT_LIST_SIZE``,
``SVC_GQL_MAX_LIST_MULTIPLIER``, ``SVC_GQL_MAX_SUBSCRIPTIONS``), register_error_codes
(``INVALID_FILTER``), register_site_caches (``graphql_schemas``, ``graphql_documents``),
register_routes. Subscriptions read the items plugin's live topics (``items.<collection>``).
"""
