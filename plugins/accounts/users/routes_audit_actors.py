"""``GET /audit/actors``: who appears in the site's audit trail, for an actor filter (site admins).

The site's members are ``GET /users``; the trail also holds people who are members of no site:
the instance admin above all, who may act in every site. Each actor is ``{ id, kind, email,
instanceAdmin }``: ``email`` for a user (``null`` for an API key, an extension, or a user since
deleted), so a filter can name everyone whose actions ``GET /audit?actorId=`` finds.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from kernel import Route, ops
from kernel.http.media import send_data
from kernel.http.middleware import request_context
from kernel.policy.audit import actors_of
from plugins.accounts.tables import users

ACTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "kind", "email", "instanceAdmin"],
    "properties": {"id": {"type": "string"}, "kind": {"type": ["string", "null"]},
                   "email": {"type": ["string", "null"]}, "instanceAdmin": {"type": "boolean"}},
}


class AuditActorsResource:
    """``GET /audit/actors``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        site_id = request_context(req).require_site()
        async with self.kernel.db.connect() as conn:
            found = await actors_of(conn, site_id)
            ids = [actor for actor, _kind in found]
            rows = (await conn.execute(select(users.c.id, users.c.email, users.c.is_instance_admin)
                                       .where(users.c.id.in_(ids)))).all() if ids else []
        known = {row[0]: (row[1], bool(row[2])) for row in rows}
        data = [{"id": actor, "kind": kind, "email": known.get(actor, (None, False))[0],
                 "instanceAdmin": known.get(actor, (None, False))[1]} for actor, kind in found]
        data.sort(key=lambda a: (a["email"] is None, a["email"] or "", a["id"]))
        send_data(resp, data, meta={"total": len(data)})


def routes(kernel: Any) -> list[Route]:
    """The route, for the plugin's ``register_routes``."""
    return [Route("/audit/actors", AuditActorsResource(kernel), site="required", auth="admin",
                  openapi=ops(get=("Who appears in the site's audit trail", None, [ACTOR_SCHEMA], 200)))]
