"""Hook implementations of the accounts plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import ApiError, RateBucket, Route, hookimpl, ops
from kernel.auth.tokens import ISSUER as INTERNAL_ISSUER
from kernel.auth.tokens import bearer_token, peek_issuer
from plugins.accounts import hookspecs, routes, service
from plugins.accounts import retention as activity_retention
from plugins.accounts.apikeys import apikeys, routes_apikeys
from plugins.accounts.external import external_auth, oidc_login, routes_issuers
from plugins.accounts.selfservice import emails, mail_queue, onetime, routes_me, routes_selfservice
from plugins.accounts.sessions import routes_sessions as rs
from plugins.accounts.sessions import session_live, sessions
from plugins.accounts.users import routes_audit_actors, routes_users

name = "accounts"
# The kernel refuses to start without this plugin: other features read data through it.
essential = True
requires = ("access",)

USER_SCHEMA = {
    "type": "object",
    "required": ["id", "email"],
    "properties": {"id": {"type": "string"}, "email": {"type": "string"},
                   "firstName": {"type": ["string", "null"]}, "lastName": {"type": ["string", "null"]},
                   "avatar": {"type": ["string", "null"]}},
}
MY_SITE_SCHEMA = {
    "type": "object", "required": ["id", "name", "roleId", "roleName"],
    "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                   "roleId": {"type": ["string", "null"]}, "roleName": {"type": ["string", "null"]}}}
PASSWORD_LOGIN_BODY = {
    "title": "PasswordLogin", "type": "object", "required": ["email", "password"],
    "properties": {"email": {"type": "string", "format": "email", "maxLength": 320},
                   "password": {"type": "string", "minLength": 1, "maxLength": 1024}},
}
# An OpenID Connect authorization code of a trusted issuer (docs/accounts.md).
EXTERNAL_LOGIN_BODY = {
    "title": "ExternalCodeLogin", "type": "object", "required": ["issuer", "code", "state"],
    "additionalProperties": False,
    "properties": {"issuer": {"type": "string", "minLength": 1, "maxLength": 500},
                   "code": {"type": "string", "minLength": 1, "maxLength": oidc_login.MAX_CODE},
                   "state": {"type": "string", "minLength": 16, "maxLength": 256}},
}
LOGIN_BODY = {"oneOf": [PASSWORD_LOGIN_BODY, EXTERNAL_LOGIN_BODY]}
EXTERNAL_START_BODY = {
    "type": "object", "required": ["issuer", "redirectUri"], "additionalProperties": False,
    "properties": {"issuer": {"type": "string", "minLength": 1, "maxLength": 500},
                   "redirectUri": {"type": "string", "minLength": 1, "maxLength": oidc_login.MAX_REDIRECT}},
}
EXTERNAL_START_DATA = {
    "type": "object", "required": ["authorizationUrl", "state", "expiresIn"],
    "properties": {"authorizationUrl": {"type": "string"}, "state": {"type": "string"},
                   "expiresIn": {"type": "integer"}},
}
LOGIN_DATA = rs.session_data(USER_SCHEMA)


@hookimpl
async def provision_user(kernel: Any, conn: Any, email: str, password: str | None, roles: dict[str, str]) -> str:
    return await service.provision_user(kernel, conn, email=email, password=password, roles=roles)


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    """The auth routes per minute and client IP, across sites (``SVC_RATE_LIMIT_AUTH``, docs/settings.md):
    naming
    another site must not buy an attacker more password guesses."""
    return {"auth": RateBucket("rate_limit_auth", 60.0, "ip")}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    return [
        Route("/auth/login", rs.LoginResource(kernel), site="optional", auth="public", rate_limit="auth",
              openapi=ops(post=("Log in with email and password, or a trusted issuer's authorization code",
                                LOGIN_BODY, LOGIN_DATA, 200))),
        Route("/auth/external/start", rs.ExternalStartResource(kernel), site="required", auth="public",
              rate_limit="auth",
              openapi=ops(post=("Begin an OpenID Connect login at a trusted issuer (PKCE)", EXTERNAL_START_BODY,
                                EXTERNAL_START_DATA, 200))),
        # -- me (studio part 2): the caller edits their own name (routes_me.py)
        Route("/auth/me", routes_me.Profile(kernel), site="optional", auth="bearer",
              openapi=ops(get=("The current user's profile", None, USER_SCHEMA, 200),
                          patch=("Change the caller's own name", routes_me.PROFILE_BODY, USER_SCHEMA, 200))),
        Route("/me/sites", routes.MySitesResource(kernel), site="optional", auth="bearer",
              openapi=ops(get=("The sites the caller is a member of (every site for the instance admin)",
                               None, [MY_SITE_SCHEMA], 200))),
        # Sessions, refresh tokens, change-password, impersonation (routes_sessions.py).
        Route("/auth/refresh", rs.RefreshResource(kernel), site="optional", auth="public", rate_limit="auth",
              openapi=rs.optional_body(ops(post=("Rotate the refresh token (body, or cookie + X-Svc-Refresh: 1)",
                                                 rs.REFRESH_BODY, LOGIN_DATA, 200)))),
        # -- studio41: a session moved to another of the user's sites (site_switch.py)
        Route("/auth/switch-site", rs.SwitchSiteResource(kernel), site="required", auth="public",
              rate_limit="auth",
              openapi=rs.optional_body(ops(post=("Exchange the session (refresh token: body, or cookie + "
                                                 "X-Svc-Refresh: 1) for one bound to the site of X-Svc-Site",
                                                 rs.REFRESH_BODY, LOGIN_DATA, 200)))),
        Route("/auth/logout", rs.LogoutResource(kernel), site="optional", auth="public", rate_limit="auth",
              openapi=rs.optional_body(ops(post=("Revoke the refresh token's family; clear the cookie",
                                                 rs.REFRESH_BODY, None, 204)))),
        Route("/me/change-password", rs.ChangePasswordResource(kernel), site="optional", auth="bearer",
              openapi=ops(post=("Change the password; other sessions end", rs.CHANGE_PASSWORD_BODY, LOGIN_DATA,
                                200))),
        Route("/me/sessions", rs.MySessionsResource(kernel), site="optional", auth="bearer",
              openapi=ops(get=("The caller's live sessions", None, [rs.SESSION_SCHEMA], 200),
                          delete=("Revoke every session of the caller", None, None, 204))),
        Route("/me/sessions/{session_id}", rs.MySessionResource(kernel), site="optional", auth="bearer",
              openapi=ops(delete=("Revoke one of the caller's sessions", None, None, 204))),
        Route("/users/{user_id}/sessions", rs.UserSessionsResource(kernel), site="required", auth="admin",
              openapi=ops(get=("A member's live sessions in this site", None, [rs.SESSION_SCHEMA], 200))),
        Route("/sessions/{session_id}", rs.SessionResource(kernel), site="required", auth="admin",
              openapi=ops(delete=("Revoke a member's session", None, None, 204))),
        Route("/users/{user_id}/impersonate", rs.ImpersonateResource(kernel), site="required", auth="admin",
              openapi=ops(post=("A short-lived token acting as a member (audited)", None,
                                rs.impersonation_data(USER_SCHEMA), 200))),
        # Self-service, user admin and invitations, API keys, trusted issuers (routes_*.py).
        *routes_selfservice.routes(kernel),
        *routes_users.routes(kernel),
        *routes_audit_actors.routes(kernel),  # -- audit: the actor filter's choices
        *routes_apikeys.routes(kernel),
        *routes_me.routes(kernel),  # -- me: personal API keys
        *routes_issuers.issuer_routes(kernel),
    ]


@hookimpl
def register_commands(subparsers: Any, kernel_factory: Any) -> None:
    """``svc users create`` and ``svc users set-password`` (commands.py)."""
    from plugins.accounts import commands

    commands.register(subparsers, kernel_factory)


@hookimpl
def register_settings() -> list[Any]:
    return [*sessions.SETTINGS, *emails.SETTINGS, *onetime.SETTINGS, *oidc_login.SETTINGS]


@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(hookspecs)


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {
        "ISSUER_ALREADY_EXISTS": (409, "The site already trusts an issuer with this 'issuer' value."),
        "DELIVERY_FAILED": (502, "The email server could not be reached or refused the message."),
        **oidc_login.ERROR_CODES,
    }


@hookimpl
async def startup(kernel: Any) -> None:
    await service.bootstrap_instance_admin(kernel)


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    mail_queue.register(jobs)  # the account emails of register, resend and forgot


@hookimpl
async def site_deleted(kernel: Any, site_id: str, conn: Any) -> None:
    await sessions.delete_site_rows(conn, site_id)
    await oidc_login.delete_site_rows(conn, site_id)


# The authenticate chain, in three steps ordered by tryfirst / plain / trylast.
@hookimpl(tryfirst=True)
async def authenticate(request: Any, kernel: Any, site: Any) -> Any:
    """``Authorization: Bearer svk_...``: API keys, first in the chain; any other credential passes."""
    token = bearer_token(request.get_header("Authorization"))
    if token is None or not token.startswith(apikeys.KEY_PREFIX):
        return None
    return await apikeys.authenticate(kernel, token, site)


@hookimpl(specname="authenticate")
async def authenticate_external(request: Any, kernel: Any, site: Any) -> Any:
    """Tokens of the site's trusted external issuers; a token of no enabled issuer passes."""
    return await external_auth.authenticate(request, kernel, site)


@hookimpl(specname="authenticate", trylast=True)
async def authenticate_internal(request: Any, kernel: Any, site: Any) -> Any:
    """The internal JWT, last: tokens of other issuers were handled (or passed) before."""
    header = request.get_header("Authorization")
    token = bearer_token(header)
    if token is None:
        if header:
            raise ApiError.unauthenticated("Authorization must be 'Bearer <token>'")
        return None
    iss = peek_issuer(token)
    if iss is not None and iss != INTERNAL_ISSUER:
        raise ApiError.unauthenticated("The token's issuer is not trusted by this site")
    return await service.principal_from_token(kernel, token, site)


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    """``sessions``: whether an access token's session is live (session_live.py)."""
    return [session_live.SESSION_CACHE]


@hookimpl
def register_retention_targets(kernel: Any) -> list[Any]:
    """``activity`` (the privacy plugin applies the horizon; docs/privacy.md)."""
    return [activity_retention.TARGET]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``accounts``: the subject's accounts leave the site; an identity no other site holds is deleted."""
    from kernel.policy.privacy import ErasureTarget
    from plugins.accounts.users.users import erase_accounts

    return [ErasureTarget("accounts", erase_accounts,
                          "The subject's accounts leave the site (sessions too); an identity no other site holds goes.",
                          order=100)]
