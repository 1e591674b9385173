"""Falcon resources of an item's history: revisions, revert, versions, compare, promote, pins.

Thin: parse, call ``api`` (revisions, as other plugins read them) or ``revisions``/``versions``/
``pins``, shape the answer. ``history_routes``
builds the ``Route`` list ``plugin.register_routes`` adds (auth ``public``: the site's
permissions decide, as for items; rate buckets ``items_read`` for GET, ``items_write`` else).
"""

from __future__ import annotations

from typing import Any

from kernel import Route, ops
from kernel.base.errors import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import pagination
from plugins.items import api
from plugins.items.core.guard import caller_may
from plugins.items.history import pins, revisions, versions
from plugins.items.http import openapi_history as h
from plugins.items.http.openapi import ITEM, with_params

BASE = "/items/{collection}/{item_id}"
LIMITS = {"GET": "items_read", "*": "items_write"}


def _staged(req: Any) -> bool | None:
    raw = req.get_param("staged")
    if raw is None or raw == "":
        return None
    if raw not in ("true", "false"):
        raise ApiError.validation("'staged' must be true or false", path=["query", "staged"])
    return raw == "true"


class RevisionsResource:
    """``.../revisions``: list (newest first), and prepare a (staged) revision."""

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        limit, offset = pagination(req)
        page, meta = await api.list_revisions(request_context(req), collection, item_id, limit=limit,
                                              offset=offset, staged=_staged(req))
        send_data(resp, page, meta=meta)

    async def on_post(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        body = await read_json(req)
        send_data(resp, await revisions.stage_revision(request_context(req), collection, item_id, body), status=201)


class RevisionResource:
    """``.../revisions/{revision_id}``: one revision."""

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str, revision_id: str) -> None:
        send_data(resp, await api.get_revision(request_context(req), collection, item_id, revision_id))


class CommitResource:
    """``.../revisions/{revision_id}/commit``: freeze a staged revision."""

    async def on_post(self, req: Any, resp: Any, collection: str, item_id: str, revision_id: str) -> None:
        send_data(resp, await revisions.commit_revision(request_context(req), collection, item_id, revision_id))


class RevertResource:
    """``.../revert`` ``{ revisionId }``."""

    async def on_post(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        body = await read_json(req)
        item, meta = await revisions.revert_item(request_context(req), collection, item_id, body)
        send_data(resp, item, meta=meta)


class VersionsResource:
    """``.../versions``: list, create."""

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        send_data(resp, await versions.list_versions(request_context(req), collection, item_id))

    async def on_post(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        body = await read_json(req)
        send_data(resp, await versions.create_version(request_context(req), collection, item_id, body), status=201)


class VersionResource:
    """``.../versions/{key}``: get, update, delete."""

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str, key: str) -> None:
        send_data(resp, await versions.get_version(request_context(req), collection, item_id, key))

    async def on_patch(self, req: Any, resp: Any, collection: str, item_id: str, key: str) -> None:
        body = await read_json(req)
        send_data(resp, await versions.update_version(request_context(req), collection, item_id, key, body))

    async def on_delete(self, req: Any, resp: Any, collection: str, item_id: str, key: str) -> None:
        await versions.delete_version(request_context(req), collection, item_id, key)
        send_no_content(resp)


class CompareResource:
    """``.../versions/{key}/compare``."""

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str, key: str) -> None:
        send_data(resp, await versions.compare_version(request_context(req), collection, item_id, key))


class PromoteResource:
    """``.../versions/{key}/promote`` ``{ fields? }`` (the body may be empty)."""

    async def on_post(self, req: Any, resp: Any, collection: str, item_id: str, key: str) -> None:
        body = await read_json(req, required=False)
        item, meta = await versions.promote_version(request_context(req), collection, item_id, key, body)
        send_data(resp, item, meta=meta)


class PinsResource:
    """``.../pins``: list, create."""

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        send_data(resp, await pins.list_pins(request_context(req), collection, item_id))

    async def on_post(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        body = await read_json(req)
        send_data(resp, await pins.create_pin(request_context(req), collection, item_id, body), status=201)


class PinResource:
    """``.../pins/{field}``: get, release."""

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str, field: str) -> None:
        send_data(resp, await pins.get_pin(request_context(req), collection, item_id, field))

    async def on_delete(self, req: Any, resp: Any, collection: str, item_id: str, field: str) -> None:
        await pins.release_pin(request_context(req), collection, item_id, field)
        send_no_content(resp)


def history_routes(auth: str) -> list[Route]:
    """Every history route, with its OpenAPI operations."""
    def route(path: str, resource: Any, openapi: dict[str, Any], caller: Any = None) -> Route:
        return Route(BASE + path, resource, auth=auth, rate_limit=LIMITS, openapi=openapi, caller=caller)

    update = caller_may("update")  # a version's writes check it first (load_target): before the body

    return [
        route("/revisions", RevisionsResource(), with_params(ops(
            get=("List an item's revisions, newest first", None, [h.REVISION], 200),
            post=("Prepare a revision (staged by default) without touching the item", h.STAGE_BODY, h.REVISION,
                  201)), "get", h.REVISION_PARAMS)),
        route("/revisions/{revision_id}", RevisionResource(), ops(
            get=("Get one revision of an item", None, h.REVISION, 200))),
        route("/revisions/{revision_id}/commit", CommitResource(), ops(
            post=("Commit a staged revision (releases may then pin it)", None, h.REVISION, 200))),
        route("/revert", RevertResource(), ops(
            post=("Revert an item's content to a committed revision", h.REVERT_BODY, ITEM, 200))),
        route("/versions", VersionsResource(), ops(
            get=("List an item's named versions", None, [h.VERSION], 200),
            post=("Create a named version from the current item", h.VERSION_CREATE, h.VERSION, 201))),
        route("/versions/{key}", VersionResource(), ops(
            get=("Get a named version", None, h.VERSION, 200),
            patch=("Update a version's data or name (the item is untouched)", h.VERSION_PATCH, h.VERSION, 200),
            delete=("Delete a named version", None, None, 204)), caller={"PATCH": update}),
        route("/versions/{key}/compare", CompareResource(), ops(
            get=("Compare a version with the item", None, h.COMPARE, 200))),
        route("/versions/{key}/promote", PromoteResource(), h.optional_body(ops(
            post=("Apply a version's changes to the item", h.PROMOTE_BODY, ITEM, 200)), "post"), caller=update),
        route("/pins", PinsResource(), ops(
            get=("List an item's active field pins", None, [h.PIN], 200),
            post=("Pin a field of an item for the caller", h.PIN_BODY, h.PIN, 201))),
        route("/pins/{field}", PinResource(), ops(
            get=("Get one field pin", None, h.PIN, 200),
            delete=("Release a field pin (holder or admin)", None, None, 204))),
    ]
