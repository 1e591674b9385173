"""schema: collections, fields and relations of each site, and the snapshot everyone reads.

Owns ``svc_collections`` (soft-deleted rows kept; live names unique per site),
``svc_fields``, ``svc_relations`` and ``svc_schema_versions`` (a per-site counter bumped by
every change). Routes: ``/collections`` (+ ``/{name}``, ``/{name}/restore``), ``/fields``
(+ ``/{collection}``, ``/{collection}/{field}``), ``/relations`` (+ ``/{relation_id}``);
schema bundles ``/collections/{name}/schema`` and ``/collections/diff``, and the config
manifest ``/config/export`` and ``/config/import`` (``bundles``, ``manifest*``, ``diffing``,
``applying``; docs/decisions/schema-manifest.md).
The twenty field types live in ``types.py`` (pure: ``validate_value``, ``convert``,
``converts``). Site data goes with the site through ``ON DELETE CASCADE``.

Hooks: register_routes, register_event_handlers, register_hookspecs,
register_error_codes (``DESTRUCTIVE_BLOCKED``). Publishes ``config_sections(kernel)``: the
settings and webhooks sections of the manifest (``manifest_hooks.py``).
Events: filter and action ``collections.*``, ``fields.*``, ``relations.*`` (create, update,
delete); filter ``fields.type_change``; action ``schema.changed`` ``{ siteId, version }``,
which drops every worker's cached snapshot; filter ``schema.data_check`` ``{ siteId, targets }``
(a config import asks whether dropped collections or fields hold data); listens to
``sites.changed``.
Other plugins use ``plugins.schema.api`` (declare ``requires = ("schema",)``): ``get_schema``,
the snapshot types, ``relations_pointing_to``, ``validate_value`` and the write services.
"""
