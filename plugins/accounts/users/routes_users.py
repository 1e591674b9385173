"""User admin routes (auth admin, site required): ``/users``, ``/users/{user_id}``,
``/users/invite``. Unknown body keys are refused, so no route sets ``is_instance_admin``,
``token_version`` or a password hash (no mass assignment)."""

from __future__ import annotations

from typing import Any

from kernel import Route, ops
from kernel.base.errors import ApiError
from kernel.http.media import read_json, reject_unknown, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.accounts import identity
from plugins.accounts.selfservice import invites
from plugins.accounts.users import users

_NULLABLE = {"type": ["string", "null"], "maxLength": identity.MAX_NAME}
_PASSWORD = {"type": "string", "minLength": identity.MIN_PASSWORD, "maxLength": identity.MAX_PASSWORD}
_EMAIL = {"type": "string", "format": "email", "maxLength": 320}
_STATUS = {"type": "string", "enum": list(identity.STATUSES)}

USER_RECORD = {
    "type": "object", "required": ["id", "email", "firstName", "lastName", "avatar", "status", "roleId"],
    "properties": {"id": {"type": "string"}, "email": {"type": "string"}, "firstName": {"type": ["string", "null"]},
                   "lastName": {"type": ["string", "null"]}, "avatar": {"type": ["string", "null"]},
                   "status": _STATUS, "roleId": {"type": "string"}},
}
CREATE_BODY = {
    "type": "object", "required": ["email"], "additionalProperties": False,
    "properties": {"email": _EMAIL, "password": _PASSWORD, "firstName": _NULLABLE, "lastName": _NULLABLE,
                   "roleId": {"type": "string"}, "status": _STATUS},
}
PATCH_BODY = {
    "type": "object", "additionalProperties": False,
    "properties": {"email": _EMAIL, "password": _PASSWORD, "firstName": _NULLABLE, "lastName": _NULLABLE,
                   "avatar": {"type": ["string", "null"], "maxLength": identity.MAX_AVATAR},
                   "roleId": {"type": "string"}, "status": _STATUS},
}
INVITE_BODY = {
    "type": "object", "required": ["email"], "additionalProperties": False,
    "properties": {"email": _EMAIL, "roleId": {"type": "string"}, "firstName": _NULLABLE, "lastName": _NULLABLE},
}
LIST_PARAMS = [
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
    {"name": "status", "in": "query", "schema": _STATUS},
    {"name": "roleId", "in": "query", "schema": {"type": "string"}},
    {"name": "search", "in": "query", "schema": {"type": "string", "maxLength": 200}},
]


def _text_param(req: Any, name: str) -> str | None:
    value = req.get_param(name)
    if value is not None and (len(value) > 200 or "\x00" in value):
        raise ApiError.validation(f"'{name}' must be a text of at most 200 characters", path=["query", name])
    return value or None


class UsersResource:
    """``GET /users`` (members of the site) and ``POST /users``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        limit, offset = pagination(req)
        status = _text_param(req, "status")
        if status is not None and status not in identity.STATUSES:
            raise ApiError.validation(f"'status' must be one of {', '.join(identity.STATUSES)}",
                                      path=["query", "status"])
        async with ctx.reader() as db:
            rows, total = await users.list_users(db, status=status, role_id=_text_param(req, "roleId"),
                                                 search=_text_param(req, "search"), limit=limit, offset=offset)
        send_data(resp, rows, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        reject_unknown(body, CREATE_BODY["properties"].keys())
        send_data(resp, await users.create_user(request_context(req), body), status=201)


class UserResource:
    """``GET``, ``PATCH``, ``DELETE /users/{user_id}``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any, user_id: str) -> None:
        async with request_context(req).reader() as db:
            send_data(resp, users.user_record(await users.get_member(db, user_id)))

    async def on_patch(self, req: Any, resp: Any, user_id: str) -> None:
        body = await read_json(req)
        reject_unknown(body, PATCH_BODY["properties"].keys())
        send_data(resp, await users.update_user(request_context(req), user_id, body))

    async def on_delete(self, req: Any, resp: Any, user_id: str) -> None:
        await users.delete_user(request_context(req), user_id)
        send_no_content(resp)


class InviteResource:
    """``POST /users/invite``: 201 for a new invitation, 200 when a pending one is sent again."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        reject_unknown(body, INVITE_BODY["properties"].keys())
        record, status = await invites.invite_user(request_context(req), body)
        send_data(resp, record, status=status)


def routes(kernel: Any) -> list[Route]:
    """The user admin routes, for the plugin's ``register_routes``."""
    listing = ops(get=("Members of the site", None, [USER_RECORD], 200),
                  post=("Create a user or add an existing identity to the site", CREATE_BODY, USER_RECORD, 201))
    listing["get"]["parameters"] = LIST_PARAMS
    invite = ops(post=("Invite someone to the site by email", INVITE_BODY, USER_RECORD, 201))
    invite["post"]["responses"]["200"] = invite["post"]["responses"]["201"]  # a pending invitation resent
    return [
        Route("/users", UsersResource(kernel), auth="admin", openapi=listing),
        Route("/users/invite", InviteResource(kernel), auth="admin", openapi=invite),
        Route("/users/{user_id}", UserResource(kernel), auth="admin", openapi=ops(
            get=("One member of the site", None, USER_RECORD, 200),
            patch=("Change a member (role; identity fields where allowed)", PATCH_BODY, USER_RECORD, 200),
            delete=("Remove a member from the site", None, None, 204))),
    ]
