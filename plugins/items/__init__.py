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

Modules: ``api`` (what other plugins import, and REST calls: typed create, read, list, update,
delete, aggregate with ``uow=``, ``cause=``, ``draft``/``locale``), ``service`` (the one data path
behind it),
``query/`` (the query language: list parameters, filters, sort, aggregates -> SQL), ``params``
(HTTP query -> ``query.ListQuery``), ``readplan`` (a read's statements, cached), ``listing``
(running them: one page, its total, aggregates), ``projection`` and ``nested`` (``fields``/``deep``:
nested m2o/o2m reads), ``validation`` (bodies), ``guard`` (``kernel.access`` decisions),
``rowfilter`` (permission conditions -> SQL), ``search*`` (full-text), ``revisions``,
``versions``, ``pins``, ``drafts``/``locale`` (X-Svc-Draft, X-Svc-Locale), ``jsonpath`` (the SQL expression of a field,
shared with the compiler and the indexes), ``writes`` (rows + events), ``ondelete``/``refs``
(relations), ``dependents``, ``schema_hooks`` and ``indexes`` (schema changes), ``records``.

Hooks: register_migrations, register_routes, register_event_handlers, register_error_codes,
register_middleware (the draft/locale read options), startup and shutdown (the search
backfill: a background task indexing items the index misses, ``search_backfill``).
Events: filter and action ``items.create|update|delete`` and ``<collection>.items.<op>``
(``{ siteId, collection, id, before?, after?, cause?, causedBy?, principal }``); filters on
``fields.type_change``, ``fields.create``, ``fields.update``, ``fields.delete``; actions on
``fields.create|update|delete`` (indexes). Errors: DEPENDENT_RECORDS_EXIST, FIELD_REQUIRED,
INVALID_TARGET (plus the kernel's RECORD_NOT_FOUND, CONFLICT, VALIDATION_FAILED).
"""
