"""Hook implementations of the accounts plugin (its table of contents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel import ApiError, Route, hookimpl, ops
from kernel.auth.tokens import bearer_token, peek_issuer
from kernel.auth.tokens import ISSUER as INTERNAL_ISSUER
from plugins.accounts import routes, service

name = "accounts"
requires = ("access",)

USER_SCHEMA = {
    "type": "object",
    "required": ["id", "email"],
    "properties": {"id": {"type": "string"}, "email": {"type": "string"},
                   "firstName": {"type": ["string", "null"]}, "lastName": {"type": ["string", "null"]},
                   "avatar": {"type": ["string", "null"]}},
}
LOGIN_BODY = {
    "type": "object", "required": ["email", "password"],
    "properties": {"email": {"type": "string"}, "password": {"type": "string"}},
}
LOGIN_DATA = {
    "type": "object", "required": ["token", "user"],
    "properties": {"token": {"type": "string"}, "expiresIn": {"type": "integer"}, "user": USER_SCHEMA},
}


@hookimpl
def register_migrations() -> str:
    return str(Path(__file__).resolve().parent / "migrations")


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    return [
        Route("/auth/login", routes.LoginResource(kernel), site="optional", auth="public", rate_limit="auth",
              openapi=ops(post=("Log in with email and password", LOGIN_BODY, LOGIN_DATA, 200))),
        Route("/auth/me", routes.MeResource(kernel), site="optional", auth="bearer",
              openapi=ops(get=("The current user's profile", None, USER_SCHEMA, 200))),
    ]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {"INVALID_CREDENTIALS": (401, "Wrong email or password.")}


@hookimpl
async def startup(kernel: Any) -> None:
    await service.bootstrap_instance_admin(kernel)


@hookimpl(trylast=True)
async def authenticate(request: Any, kernel: Any, site: Any) -> Any:
    """The internal JWT, last in the chain. Tokens of other issuers were handled before us."""
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
