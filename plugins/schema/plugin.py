"""Hook implementations of the schema plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, hookimpl, ops
from plugins.schema import cache
from plugins.schema import openapi_schemas as s
from plugins.schema.bundles.routes_bundles import CollectionDiffResource, CollectionSchemaResource
from plugins.schema.changes import SCHEMA_CHANGED
from plugins.schema.collections.routes_collections import (
    CollectionResource,
    CollectionRestoreResource,
    CollectionsResource,
)
from plugins.schema.config import manifest_hooks
from plugins.schema.config import openapi_config as oc
from plugins.schema.config.routes_config import ConfigExportResource, ConfigImportResource
from plugins.schema.fields.routes_fields import AllFieldsResource, CollectionFieldsResource, FieldResource
from plugins.schema.relations.routes_relations import RelationResource, RelationsResource

name = "schema"
# The kernel refuses to start without this plugin: other features read data through it.
essential = True
# Reads: any authenticated principal (permissions narrow them later); writes: site admins.
READ_ANY_WRITE_ADMIN = {"GET": "bearer", "*": "admin"}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    auth = READ_ANY_WRITE_ADMIN
    return [
        Route("/collections", CollectionsResource(), auth=auth, openapi=s.with_params(ops(
            get=("List collections", None, [s.COLLECTION], 200),
            post=("Create a collection", s.COLLECTION_BODY, s.COLLECTION, 201)), "get", s.DELETED_PARAM)),
        Route("/collections/{name}", CollectionResource(), auth=auth, openapi=ops(
            get=("Get a collection", None, s.COLLECTION, 200),
            patch=("Update a collection's meta", s.COLLECTION_PATCH, s.COLLECTION, 200),
            delete=("Soft-delete a collection", None, None, 204))),
        Route("/collections/{name}/restore", CollectionRestoreResource(), auth="admin", openapi=ops(
            post=("Restore a soft-deleted collection", None, s.COLLECTION, 200))),
        Route("/fields", AllFieldsResource(), auth=auth, openapi=ops(
            get=("List the fields of every collection", None, [s.FIELD], 200))),
        Route("/fields/{collection}", CollectionFieldsResource(), auth=auth, openapi=ops(
            get=("List a collection's fields", None, [s.FIELD], 200),
            post=("Add a field", s.FIELD_CREATE, s.FIELD, 201))),
        Route("/fields/{collection}/{field}", FieldResource(), auth=auth, openapi=ops(
            get=("Get a field", None, s.FIELD, 200),
            patch=("Update a field", s.FIELD_BODY, s.FIELD, 200),
            delete=("Remove a field", None, None, 204))),
        Route("/relations", RelationsResource(), auth=auth, openapi=s.with_params(ops(
            get=("List relations", None, [s.RELATION], 200),
            post=("Create a relation", s.RELATION_BODY, s.RELATION, 201)), "get", s.COLLECTION_PARAM)),
        Route("/relations/{relation_id}", RelationResource(), auth=auth, openapi=ops(
            get=("Get a relation", None, s.RELATION, 200),
            patch=("Update a relation", s.RELATION_PATCH, s.RELATION, 200),
            delete=("Remove a relation", None, None, 204))),
    ]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [cache.SCHEMA_CACHE]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    # Not the spec's ``invalidate_on``: a late message about an older version keeps the snapshot.
    bus.on_action(SCHEMA_CHANGED, cache.on_schema_changed(kernel))


# Schema bundles and the config manifest (bundles.py, manifest*.py, diffing.py, applying.py).
@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(manifest_hooks)  # config_sections: settings and webhooks join the manifest


@hookimpl(specname="register_routes")
def register_config_routes(kernel: Any) -> list[Route]:
    return [
        Route("/collections/{name}/schema", CollectionSchemaResource(), auth=READ_ANY_WRITE_ADMIN,
              openapi=ops(get=("Export a collection as a schema bundle", None, oc.BUNDLE, 200),
                          put=("Apply a schema bundle (idempotent)", oc.BUNDLE_BODY, oc.BUNDLE_APPLIED, 200))),
        Route("/collections/diff", CollectionDiffResource(), auth="admin", openapi=ops(
            post=("Compare a schema bundle with the current schema", oc.BUNDLE_BODY, oc.BUNDLE_DIFF, 200))),
        Route("/config/export", ConfigExportResource(kernel), auth="admin", openapi=s.with_params(ops(
            get=("Export the config manifest", None, oc.MANIFEST, 200)), "get", oc.SCOPE_PARAM)),
        Route("/config/import", ConfigImportResource(kernel), auth="admin", openapi=s.with_params(ops(
            post=("Validate, diff and apply a config manifest", oc.MANIFEST_BODY, oc.IMPORT_RESULT, 200)),
            "post", *oc.IMPORT_PARAMS)),
    ]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {"DESTRUCTIVE_BLOCKED": (409, "A config import would drop data or change types; "
                                         "repeat with allowDestructive=true.")}
