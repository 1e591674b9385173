"""Hook implementations of the access plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import hookimpl
from plugins.access import api, loader, routes, routes_audit
from plugins.access.rules import collection_grants, field_grants

name = "access"
# The kernel refuses to start without this plugin: other features read data through it.
essential = True


@hookimpl
def register_routes(kernel: Any) -> list[Any]:
    """Roles, policies, rules, attachments, teams, /permissions/*, /users/subscriber-access,
    and GET /audit (the site's audit trail)."""
    return [*routes.access_routes(kernel), *routes_audit.audit_routes(kernel)]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    """A deleted field leaves every rule of its collection (``field_grants``); a deleted
    collection takes its rules with it (``collection_grants``)."""
    bus.on_filter("fields.delete", field_grants.drop_field_grants)
    bus.on_action("fields.delete", field_grants.forget_decisions)
    bus.on_filter("collections.delete", collection_grants.drop_collection_rules)
    bus.on_action("collections.delete", field_grants.forget_decisions)


@hookimpl
async def load_access(kernel: Any, site_id: str, principal: Any) -> Any:
    return await loader.load_snapshot(kernel, site_id, principal)


@hookimpl
async def site_created(kernel: Any, site: dict[str, Any], conn: Any) -> None:
    await api.seed_site_roles(conn, site["id"])
