"""``/collections/{name}/schema`` (export, apply) and ``/collections/diff`` (compare)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import flag_param, read_json, send_data
from kernel.http.middleware import request_context
from kernel.http.params import committed
from plugins.schema.bundles import bundles
from plugins.schema.snapshot import load_snapshot
from plugins.schema.visibility import schema_view


class CollectionSchemaResource:
    """``GET`` (the bundle) and ``PUT`` (apply a bundle) ``/collections/{name}/schema``."""

    async def on_get(self, req: Any, resp: Any, name: str) -> None:
        ctx = request_context(req)
        view = await schema_view(ctx)
        async with ctx.reader() as db:
            bundle = bundles.export_bundle(await load_snapshot(db), name)
        if view is not None:  # a member: the fields and relations it may read
            view.require(name)
            bundle["fields"] = [f for f in bundle["fields"] if view.field(name, f["field"])]
            bundle["relations"] = [r for r in bundle["relations"] if view.relation(r)]
        send_data(resp, bundle)

    async def on_put(self, req: Any, resp: Any, name: str) -> None:
        body = await read_json(req)
        allow = flag_param(req, "allowDestructive")  # a field dropped with data: 409 without it
        send_data(resp, await committed(req, bundles.apply_bundle, name, body, allow_destructive=allow))


class CollectionDiffResource:
    """``POST /collections/diff``: the body is a bundle; the answer its diff. Writes nothing."""

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await read_json(req)
        async with ctx.reader() as db:
            send_data(resp, await bundles.diff_bundle(db, body))
