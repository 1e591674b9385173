"""dashboards: insight dashboards whose panels aggregate a collection's items as the caller.

Owns ``svc_dashboards`` (``{ name, icon?, color?, note? }``) and ``svc_dashboard_panels``
(``{ name, type, position, query }``), both by site. Routes (site required, bearer auth):
``/dashboards`` (list, create), ``/dashboards/{id}`` (get with panels, PATCH, DELETE),
``/dashboards/{id}/panels`` (list, create), ``/dashboards/{id}/panels/{panel_id}`` (PATCH,
which also moves a panel through ``position``; DELETE), ``.../{panel_id}/data`` (run) and
``/dashboards/{id}/panels/preview`` (dry-run a PanelQuery).

Who may manage: rules on the system collection ``svc_dashboards`` (``access.py``). A panel runs
through ``plugins.items.api`` as the caller (``panels.py``: one data path; unknown and hidden
names alike are 400 ``INVALID_FIELD``); answers of stored panels are cached briefly per caller
access in ``kernel.cache`` (``cache.py``). Modules: ``bodies`` (body checks), ``service``
(CRUD), ``panels`` (running), ``cache``, ``routes``, ``schemas``, ``tables``.

Hooks: register_settings (``SVC_DASHBOARDS_CACHE_TTL``),
register_error_codes (``INVALID_FIELD``), register_event_handlers, register_routes.
Events: listens to the actions ``items.*``, ``collections.*``, ``fields.*``, ``relations.*``
(cache generations); emits none.
"""
