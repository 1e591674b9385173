"""``/relations`` and ``/relations/{relation_id}``."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import committed
from plugins.schema.relations import relations
from plugins.schema.visibility import schema_view


class RelationsResource:
    """``GET`` (``?collection=`` narrows) and ``POST /relations``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        collection = req.get_param("collection") or None
        ctx = request_context(req)
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            data = await relations.list_relations(db, collection)
        if view is not None:  # a member sees the relations whose one end it may read
            data = [r for r in data if view.relation(r)]
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await committed(req, relations.create_relation, await read_json(req)), status=201)


class RelationResource:
    """``GET``, ``PATCH`` and ``DELETE /relations/{relation_id}``."""

    async def on_get(self, req: Any, resp: Any, relation_id: str) -> None:
        ctx = request_context(req)
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            record = await relations.get_relation(db, relation_id)
        if view is not None and not view.relation(record):
            raise relations.not_found(relation_id)
        send_data(resp, record)

    async def on_patch(self, req: Any, resp: Any, relation_id: str) -> None:
        send_data(resp, await committed(req, relations.update_relation, relation_id, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, relation_id: str) -> None:
        await committed(req, relations.delete_relation, relation_id)
        send_no_content(resp)
