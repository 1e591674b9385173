"""Routes for login, refresh, logout, change-password, sessions and impersonation (thin).

The refresh token travels in the body or in the httpOnly ``svc_refresh`` cookie. A cookie is
sent by the browser on its own, so the cookie path also needs ``X-Svc-Refresh: 1``: a header a
cross-site form cannot add (CSRF protection).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import body_field, read_json, reject_unknown, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.accounts import service
from plugins.accounts.external import oidc_login
from plugins.accounts.sessions import impersonation, password_change, session_control, sessions, site_switch
from plugins.accounts.sessions.sessions import COOKIE_NAME, COOKIE_PATH, Client

REFRESH_HEADER = "X-Svc-Refresh"
MAX_TOKEN = 512


def client_of(req: Any) -> Client:
    ctx = request_context(req)
    return Client(user_agent=req.user_agent, ip=ctx.client_ip or None, request_id=ctx.request_id)


def _cookie_options(kernel: Any) -> dict[str, Any]:
    settings = kernel.settings
    return {"path": COOKIE_PATH, "domain": settings.refresh_cookie_domain or None, "http_only": True,
            "secure": bool(settings.refresh_cookie_secure), "same_site": settings.refresh_cookie_samesite.capitalize()}


def set_refresh_cookie(resp: Any, kernel: Any, token: str) -> None:
    resp.set_cookie(COOKIE_NAME, token, max_age=sessions.refresh_ttl(kernel), **_cookie_options(kernel))


def clear_refresh_cookie(resp: Any, kernel: Any) -> None:
    # Same path and domain as when set, or the browser keeps its copy. An Expires in the past
    # deletes it (Falcon leaves out a zero Max-Age).
    resp.set_cookie(COOKIE_NAME, "", expires=dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
                    **_cookie_options(kernel))


async def presented_refresh_token(req: Any) -> str | None:
    """The refresh token from the body, else from the cookie (only with ``X-Svc-Refresh: 1``)."""
    body = await read_json(req, required=False, nul_answered=True)  # hashed: a NUL names no session
    reject_unknown(body, {"refreshToken"})
    token = body_field(body, "refreshToken", str, required=False, max_length=MAX_TOKEN)
    if token:
        return token
    cookie = next(iter(req.get_cookie_values(COOKIE_NAME) or []), None)
    if not cookie:
        return None
    if (req.get_header(REFRESH_HEADER) or "").strip() != "1":
        raise ApiError.forbidden(f"The {COOKIE_NAME} cookie is accepted only with the header "
                                 f"'{REFRESH_HEADER}: 1' (CSRF protection)")
    return cookie[:MAX_TOKEN]


class _Resource:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel


EXTERNAL_LOGIN_FIELDS = {"issuer", "code", "state"}


class LoginResource(_Resource):
    """``{ email, password }``, or ``{ issuer, code, state }``: an OpenID Connect authorization
    code of a trusted issuer (``oidc_login``); the same answer either way."""

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req, nul_answered=True)  # an unknown issuer or account, whatever its spelling
        if isinstance(body, dict) and "code" in body:
            reject_unknown(body, EXTERNAL_LOGIN_FIELDS)
            data = await oidc_login.login(self.kernel, request_context(req).site_id, body, client_of(req))
        else:
            data = await sessions.login(self.kernel, body.get("email"), body.get("password"),
                                        request_context(req).site_id, client_of(req))
        set_refresh_cookie(resp, self.kernel, data["refreshToken"])
        send_data(resp, data)


class ExternalStartResource(_Resource):
    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req, nul_answered=True)  # an issuer holding a NUL is unknown (401)
        reject_unknown(body, {"issuer", "redirectUri"})
        send_data(resp, await oidc_login.start(self.kernel, request_context(req).require_site(), body))


class RefreshResource(_Resource):
    async def on_post(self, req: Any, resp: Any) -> None:
        token = await presented_refresh_token(req)
        if token is None:
            raise ApiError.unauthenticated(
                f"No refresh token: send {{ refreshToken }} or the {COOKIE_NAME} cookie with '{REFRESH_HEADER}: 1'")
        data = await sessions.refresh(self.kernel, token, request_context(req).site_id, client_of(req))
        set_refresh_cookie(resp, self.kernel, data["refreshToken"])
        send_data(resp, data)


class SwitchSiteResource(_Resource):
    """The refresh token (body, or cookie + ``X-Svc-Refresh: 1``) for a session in the site named
    by ``X-Svc-Site`` (``site_switch``)."""

    async def on_post(self, req: Any, resp: Any) -> None:
        token = await presented_refresh_token(req)
        if token is None:
            raise ApiError.unauthenticated(
                f"No refresh token: send {{ refreshToken }} or the {COOKIE_NAME} cookie with '{REFRESH_HEADER}: 1'")
        data = await site_switch.switch_site(self.kernel, token, request_context(req).require_site(), client_of(req))
        set_refresh_cookie(resp, self.kernel, data["refreshToken"])
        send_data(resp, data)


class LogoutResource(_Resource):
    async def on_post(self, req: Any, resp: Any) -> None:
        token = await presented_refresh_token(req)
        await sessions.logout(self.kernel, token, request_context(req).site_id, client_of(req))
        clear_refresh_cookie(resp, self.kernel)
        send_no_content(resp)


class ChangePasswordResource(_Resource):
    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await read_json(req)
        reject_unknown(body, {"currentPassword", "newPassword"})
        current = body_field(body, "currentPassword", str, max_length=service.MAX_PASSWORD)
        new = body_field(body, "newPassword", str)
        data = await password_change.change_password(self.kernel, ctx.principal, current, new, ctx.site_id,
                                                     client_of(req))
        set_refresh_cookie(resp, self.kernel, data["refreshToken"])
        send_data(resp, data)


class MySessionsResource(_Resource):
    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await session_control.my_sessions(self.kernel, request_context(req).principal))

    async def on_delete(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        await session_control.revoke_all_mine(self.kernel, ctx.principal, ctx.site_id, client_of(req))
        send_no_content(resp)


class MySessionResource(_Resource):
    async def on_delete(self, req: Any, resp: Any, session_id: str) -> None:
        ctx = request_context(req)
        await session_control.revoke_my_session(self.kernel, ctx.principal, session_id, ctx.site_id,
                                                client_of(req))
        send_no_content(resp)


class UserSessionsResource(_Resource):
    async def on_get(self, req: Any, resp: Any, user_id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await session_control.sessions_for_admin(self.kernel, ctx.principal, ctx.require_site(),
                                                                 user_id))


class SessionResource(_Resource):
    async def on_delete(self, req: Any, resp: Any, session_id: str) -> None:
        ctx = request_context(req)
        await session_control.admin_revoke_session(self.kernel, ctx.principal, ctx.require_site(), session_id,
                                                   client_of(req))
        send_no_content(resp)


class ImpersonateResource(_Resource):
    async def on_post(self, req: Any, resp: Any, user_id: str) -> None:
        ctx = request_context(req)
        body = await read_json(req, required=False)
        reject_unknown(body, set())
        data = await impersonation.impersonate(self.kernel, ctx.principal, ctx.require_site(), user_id,
                                               ip=ctx.client_ip or None, request_id=ctx.request_id)
        send_data(resp, data)


# OpenAPI schemas of these answers (plugin.py lists the routes).
SESSION_SCHEMA = {
    "type": "object",
    "required": ["id", "userId", "siteId", "createdAt", "lastUsedAt", "expiresAt", "userAgent", "ip", "current"],
    "properties": {
        "id": {"type": "string"}, "userId": {"type": "string"}, "siteId": {"type": ["string", "null"]},
        "createdAt": {"type": "string"}, "lastUsedAt": {"type": ["string", "null"]},
        "expiresAt": {"type": "string"}, "userAgent": {"type": ["string", "null"]},
        "ip": {"type": ["string", "null"]}, "current": {"type": "boolean"},
    },
}
REFRESH_BODY = {"type": "object", "additionalProperties": False,
                "properties": {"refreshToken": {"type": "string", "maxLength": MAX_TOKEN}}}
CHANGE_PASSWORD_BODY = {
    "type": "object", "required": ["currentPassword", "newPassword"], "additionalProperties": False,
    "properties": {"currentPassword": {"type": "string"}, "newPassword": {"type": "string", "minLength": 8,
                                                                           "maxLength": 1024}},
}


def session_data(user_schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a login, refresh or change-password answer's ``data``."""
    return {"type": "object", "required": ["token", "refreshToken", "expiresIn", "user"],
            "properties": {"token": {"type": "string"}, "refreshToken": {"type": "string"},
                           "expiresIn": {"type": "integer"}, "user": user_schema}}


def impersonation_data(user_schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": ["token", "expiresIn", "user"],
            "properties": {"token": {"type": "string"}, "expiresIn": {"type": "integer"}, "user": user_schema}}


def optional_body(operations: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mark the request bodies of ``ops(...)`` optional (refresh and logout may use the cookie)."""
    for op in operations.values():
        if "requestBody" in op:
            op["requestBody"]["required"] = False
    return operations
