"""The signed-in person's own account (docs/accounts.md#my-account): ``PATCH /auth/me`` (the
name) and personal API keys, ``/me/api-keys`` and ``/me/api-keys/{key_id}``.

A personal key is a key of the request's site (``/api-keys`` lists it to admins) owned by its
creator (``owner_id``) and acting with the role they hold in that site when it is created: a
member never gets a key with more than their own role. Only its owner lists and revokes it
here, and it is deleted when that role changes or ends (plugins/accounts/users/membership.py)."""

from __future__ import annotations

from typing import Any

from kernel import ApiError, Route, ops
from kernel.http.media import read_json, reject_unknown, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.access import api as access_api
from plugins.accounts import identity, service
from plugins.accounts.apikeys import apikeys
from plugins.accounts.apikeys.routes_apikeys import CREATED_KEY, KEY_RECORD
from plugins.accounts.routes import MeResource
from plugins.accounts.tables import api_keys
from plugins.accounts.users.users import NAME_COLUMNS

PROFILE_BODY = {
    "type": "object",
    "additionalProperties": False,
    "description": "The caller's name; the email changes through an admin (PATCH /users/:id).",
    "properties": {
        "firstName": {"type": ["string", "null"], "maxLength": identity.MAX_NAME},
        "lastName": {"type": ["string", "null"], "maxLength": identity.MAX_NAME},
    },
}
MY_KEY_BODY = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "expiresAt": {"type": ["string", "null"], "format": "date-time"},
    },
}


def _person(req: Any) -> Any:
    principal = request_context(req).principal
    if principal.kind != "user" or not principal.user_id or principal.impersonator_id:
        raise ApiError.forbidden(
            "Only a signed-in person (not an API key or an impersonation) changes their account"
        )
    return principal


class Profile(MeResource):
    """``GET /auth/me`` and ``PATCH`` (the caller's first and last name)."""

    async def on_patch(self, req: Any, resp: Any) -> None:
        principal = _person(req)
        body = await read_json(req)
        reject_unknown(body, NAME_COLUMNS.keys())
        values = {
            column: identity.check_text(body, key) for key, column in NAME_COLUMNS.items() if key in body
        }
        if values:
            async with self.kernel.db.begin() as conn:
                await identity.update_identity(conn, principal.user_id, **values)
        row = await service.find_user(self.kernel, principal.user_id)
        if row is None:
            raise ApiError.unauthenticated()
        send_data(resp, service.public_user(row))


async def _my_role(ctx: Any, user_id: str) -> str:
    async with ctx.kernel.db.connect() as conn:
        row = await access_api.membership(conn, ctx.require_site(), user_id)
    if row is None:
        raise ApiError.forbidden("You hold no role in this site", reason="no_membership")
    return row["role_id"]


class MyApiKeys:
    """``GET /me/api-keys`` (the caller's keys in this site) and ``POST`` (the key, shown once)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        principal = _person(req)
        async with request_context(req).reader() as db:
            rows = await db.all(
                db.select(api_keys)
                .where(api_keys.c.owner_id == principal.user_id)
                .order_by(api_keys.c.created_at, api_keys.c.id)
            )
            roles = {rid: await apikeys.effective_role(db, rid) for rid in {r["role_id"] for r in rows}}
        send_data(resp, [apikeys.key_record(r, roles[r["role_id"]]) for r in rows])

    async def on_post(self, req: Any, resp: Any) -> None:
        principal = _person(req)
        ctx = request_context(req)
        body = await read_json(req)
        reject_unknown(body, MY_KEY_BODY["properties"].keys())
        role_id = await _my_role(ctx, principal.user_id)
        key = await apikeys.create_key(ctx, {**body, "roleId": role_id}, owner_id=principal.user_id)
        send_data(resp, key, status=201)


class MyApiKey:
    """``DELETE /me/api-keys/{key_id}``: another person's key is 404, never revoked."""

    async def on_delete(self, req: Any, resp: Any, key_id: str) -> None:
        principal = _person(req)
        ctx = request_context(req)
        row = None
        if service.clean_id(key_id) is not None:
            async with ctx.reader() as db:
                row = await db.one(
                    db.select(api_keys).where(
                        api_keys.c.id == key_id, api_keys.c.owner_id == principal.user_id
                    )
                )
        if row is None:
            raise ApiError.not_found("No such API key of yours in this site", code="RECORD_NOT_FOUND")
        await apikeys.delete_key(ctx, key_id)
        send_no_content(resp)


def routes(kernel: Any) -> list[Route]:
    """The caller's own account routes, for the plugin's ``register_routes``."""
    return [
        Route(
            "/me/api-keys",
            MyApiKeys(),
            auth="bearer",
            openapi=ops(
                get=("The caller's own API keys in this site (never the key)", None, [KEY_RECORD], 200),
                post=(
                    "Create a personal API key acting with the caller's role (the key is shown once)",
                    MY_KEY_BODY,
                    CREATED_KEY,
                    201,
                ),
            ),
        ),
        Route(
            "/me/api-keys/{key_id}",
            MyApiKey(),
            auth="bearer",
            openapi=ops(delete=("Revoke one of the caller's API keys", None, None, 204)),
        ),
    ]
