"""items: content items of every collection, in the one ``svc_items`` table.

Owns ``svc_items`` (structural columns + JSON ``data``, keyed by site, collection id and item
id; soft delete through ``deleted_at``) and the expression indexes of ``indexed``/``unique``
fields. Routes (site required, public auth: the site's permissions decide, anonymous callers
use the public role; rate buckets ``items_read`` / ``items_write``): ``/items/{collection}``
(list, bulk create, singleton upsert), ``/items/{collection}/{item_id}`` (get, PATCH, PUT,
DELETE), ``.../dependents`` and ``.../resolve-dependents``, history (``.../revisions``,
``.../revert``, ``.../versions``, ``.../pins``) and ``GET /search``. Also owns ``svc_search``
(the full-text index: FTS5 on SQLite, tsvector on PostgreSQL, kept in sync by bus filters in
the write's transaction), ``svc_item_revisions``, ``svc_item_versions`` and the pins.

Layout (each subpackage's ``__init__`` says what it holds; docs/architecture.md has the map):
``plugin.py`` (hook implementations), ``api.py`` (what other plugins import, and REST calls: typed
create, read, list, update, delete, aggregate with ``uow=``, ``cause=``, ``draft``/``locale``),
``tables.py`` (``svc_items``, ``svc_item_counts``, the history's tables), ``errors.py`` (error codes), ``migrations/``;
``query/`` (the query language: list parameters, filters, sort, aggregates -> SQL, and ``jsonpath``,
a field's SQL expression shared with the indexes; pure, the table is passed in);
``service.py`` (the façade: the one data path behind ``api``, reads composed from ``read/``, writes
from ``write/``); ``erase.py`` (a subject's erasure: items, history, search); ``core/`` (what read and
write share: ``context``, ``rows``, ``validation``, ``guard``, ``grants``, ``rowfilter``, ``records``,
``reveal``, ``etags``, ``live``, ``personal``, ``write_triggered``); ``write/`` (``path``, ``writes``,
``events``, ``ondelete``/``refs``, ``dependents``); ``read/`` (``readplan``, ``listing``, ``projection``/``nested``, ``drafts``/``locale`` for X-Svc-Draft and
X-Svc-Locale, ``counts``, ``whitelist``); ``history/`` (``revisions``, ``versions``, ``pins``, their
``events``, ``target``); ``search/`` (full-text: ``service``, ``query``, ``pg``/``sqlite``, ``text``,
``index``, ``events``); ``upkeep/`` (``indexes``, ``schema_hooks``, ``planner_stats``,
``pg_statistics``, ``search_backfill``, ``small_indexes``: ``svc items drop-small-indexes``); ``http/`` (``routes``, ``routes_history``, ``routes_search``,
``params``, ``openapi``, ``openapi_history``).

Hooks: register_routes, register_event_handlers, register_error_codes,
register_commands (``svc items drop-small-indexes``), register_middleware (the draft/locale read options), startup and shutdown (the search
backfill: a background task indexing items the index misses, ``upkeep.search_backfill``).
Events: filter and action ``items.create|update|delete`` and ``<collection>.items.<op>``
(``{ siteId, collection, id, before?, after?, cause?, causedBy?, principal }``), with the durable
``items.<op>`` event of the kernel log written in the same transaction (``write/events``); filters on
``fields.type_change``, ``fields.create``, ``fields.update``, ``fields.delete``; actions on
``fields.create|update|delete`` (indexes). Errors: DEPENDENT_RECORDS_EXIST, FIELD_REQUIRED,
INVALID_TARGET (plus the kernel's RECORD_NOT_FOUND, CONFLICT, VALIDATION_FAILED).
"""
