"""Routes of trusted external issuers: ``/admin/auth/issuers`` and ``/admin/auth/issuers/{issuer_id}``.

Thin resources: parse, call ``issuers``, shape the answer. Input errors in this area are 422
``VALIDATION_FAILED`` (docs/errors.md), including a body that is not JSON.
"""

from __future__ import annotations

from typing import Any

from kernel import Route, ops
from kernel.base.errors import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.accounts.external import issuers
from plugins.accounts.external.issuer_config import CREATE_SCHEMA, PATCH_SCHEMA, RECORD_SCHEMA

PAGE_PARAMS = [
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "offset", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0}},
    {"name": "page", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}},
]


def _as_422(exc: ApiError) -> ApiError:
    if exc.status == 400 and exc.code == "VALIDATION_FAILED":
        exc.status = 422  # one status for every input error of this area
    return exc


async def _read_body(req: Any) -> Any:
    try:
        return await read_json(req)
    except ApiError as exc:
        raise _as_422(exc) from None


def _page(req: Any) -> tuple[int, int]:
    try:
        return pagination(req)
    except ApiError as exc:
        raise _as_422(exc) from None


class IssuersResource:
    """``GET`` lists the site's issuers; ``POST`` registers one."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        limit, offset = _page(req)
        async with ctx.reader() as db:
            data, total = await issuers.list_issuers(db, limit=limit, offset=offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        ctx.require_site()
        body = await _read_body(req)
        async with ctx.unit_of_work() as uow:
            data = await issuers.create_issuer(uow, body, ip=ctx.client_ip or None)
        send_data(resp, data, status=201)


class IssuerResource:
    """``GET``, ``PATCH`` (merge, re-validate) and ``DELETE`` one issuer of the site."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any, issuer_id: str) -> None:
        async with request_context(req).reader() as db:
            send_data(resp, await issuers.get_issuer(db, issuer_id))

    async def on_patch(self, req: Any, resp: Any, issuer_id: str) -> None:
        ctx = request_context(req)
        ctx.require_site()
        body = await _read_body(req)
        async with ctx.unit_of_work() as uow:
            data = await issuers.update_issuer(uow, issuer_id, body, ip=ctx.client_ip or None)
        send_data(resp, data)

    async def on_delete(self, req: Any, resp: Any, issuer_id: str) -> None:
        ctx = request_context(req)
        ctx.require_site()
        async with ctx.unit_of_work() as uow:
            await issuers.delete_issuer(uow, issuer_id, ip=ctx.client_ip or None)
        send_no_content(resp)


def issuer_routes(kernel: Any) -> list[Route]:
    """The routes, for the accounts plugin's ``register_routes``."""
    listing = ops(get=("List the site's trusted external issuers", None, [RECORD_SCHEMA], 200),
                  post=("Register a trusted external issuer", CREATE_SCHEMA, RECORD_SCHEMA, 201))
    listing["get"]["parameters"] = PAGE_PARAMS
    return [
        Route("/admin/auth/issuers", IssuersResource(kernel), site="required", auth="admin", openapi=listing),
        Route("/admin/auth/issuers/{issuer_id}", IssuerResource(kernel), site="required", auth="admin",
              openapi=ops(get=("Get a trusted external issuer", None, RECORD_SCHEMA, 200),
                          patch=("Update a trusted external issuer (merge, then re-validate)", PATCH_SCHEMA,
                                 RECORD_SCHEMA, 200),
                          delete=("Remove a trusted external issuer", None, None, 204))),
    ]
