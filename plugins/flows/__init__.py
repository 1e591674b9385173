"""flows: automation. A flow is a graph of operations started by an event, a schedule, a
webhook or a person, run with an explicit principal, and recorded (redacted) as runs.

Tables: ``svc_flows``, ``svc_flow_runs`` (``tables.py``, migration ``flows_0001_flows``).
Routes (``routes.py``): ``GET /flows/operations``; ``GET, POST /flows``; ``GET, PATCH,
DELETE /flows/:id``; ``POST /flows/:id/run`` (manual); ``POST /flows/:id/trigger`` (webhook,
the flow's own token); ``GET /flows/:id/runs`` and ``/runs/:runId``.

Modules: ``api`` (``Operation`` and friends, for extensions), ``hookspecs``
(``register_flow_operations``), ``registry``, ``builtins`` (the built-in operations,
registered through the hook), ``graph`` (shape and validation), ``data`` (templates,
conditions, redaction), ``service`` (flow CRUD, trigger options, roles), ``runner`` (runs),
``triggers`` (event consumer group, schedule sweep, manual, webhook), ``routes``, ``schemas``.

Hooks: register_hookspecs (``register_flow_operations``), register_flow_operations (the
built-ins), register_settings, register_error_codes, register_routes,
register_event_consumers (group ``flows.event``), register_site_caches, register_jobs
(``flows.run``, ``flows.schedule``, ``flows.retention``), startup, shutdown. Bus action:
``flows.changed``. Audit actions: ``flows.flow.create|update|delete``.
"""
