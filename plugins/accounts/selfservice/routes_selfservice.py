"""Self-service routes (public, site required, rate limit bucket ``auth``): register, verify
email, resend verification, forgot and reset password, accept an invitation."""

from __future__ import annotations

from typing import Any

from kernel import Route, ops
from kernel.http.media import body_field, read_json, reject_unknown, send_data
from kernel.http.middleware import request_context
from plugins.accounts import identity
from plugins.accounts.selfservice import selfservice

_EMAIL = {"type": "string", "format": "email", "maxLength": 320}
_PASSWORD = {"type": "string", "minLength": identity.MIN_PASSWORD, "maxLength": identity.MAX_PASSWORD}
_TOKEN = {"type": "string", "minLength": 16, "maxLength": 256}
_NAME = {"type": ["string", "null"], "maxLength": identity.MAX_NAME}


def _body(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": props, "additionalProperties": False}


MESSAGE = {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}
REGISTER_BODY = _body(["email", "password"], email=_EMAIL, password=_PASSWORD, firstName=_NAME, lastName=_NAME)
EMAIL_BODY = _body(["email"], email=_EMAIL)
TOKEN_BODY = _body(["token"], token=_TOKEN)
TOKEN_PASSWORD_BODY = _body(["token", "password"], token=_TOKEN, password=_PASSWORD)


async def _read(req: Any, allowed: set[str]) -> dict[str, Any]:
    body = await read_json(req)
    reject_unknown(body, allowed)
    return body


class RegisterResource:
    """``POST /auth/register``: always the same 202, whether or not the address has an account."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await _read(req, {"email", "password", "firstName", "lastName"})
        await selfservice.register(
            self.kernel, ctx.site or {"id": ctx.require_site()}, email=body_field(body, "email", str),
            password=body_field(body, "password", str), first_name=identity.check_text(body, "firstName"),
            last_name=identity.check_text(body, "lastName"))
        send_data(resp, {"message": selfservice.REGISTERED}, status=202)


class VerifyEmailResource:
    """``POST /auth/verify-email``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await _read(req, {"token"})
        await selfservice.verify_email(self.kernel, ctx.require_site(), body_field(body, "token", str))
        send_data(resp, {"message": "The email address is verified"})


class EmailFlowResource:
    """``POST /auth/resend-verification`` and ``/auth/forgot-password``: a generic 202."""

    def __init__(self, kernel: Any, flow: Any) -> None:
        self.kernel = kernel
        self.flow = flow

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await _read(req, {"email"})
        await self.flow(self.kernel, ctx.site or {"id": ctx.require_site()}, body_field(body, "email", str))
        send_data(resp, {"message": selfservice.EMAIL_SENT}, status=202)


class TokenPasswordResource:
    """``POST /auth/reset-password`` and ``/auth/accept-invite``: ``{ token, password }``."""

    def __init__(self, kernel: Any, flow: Any, message: str) -> None:
        self.kernel = kernel
        self.flow = flow
        self.message = message

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await _read(req, {"token", "password"})
        await self.flow(self.kernel, ctx.require_site(), body_field(body, "token", str),
                        body_field(body, "password", str))
        send_data(resp, {"message": self.message})


def routes(kernel: Any) -> list[Route]:
    """The self-service routes, for the plugin's ``register_routes``."""
    public: dict[str, Any] = {"site": "required", "auth": "public", "rate_limit": "auth"}
    return [
        Route("/auth/register", RegisterResource(kernel), **public, openapi=ops(
            post=("Sign up as a subscriber of the site (generic answer)", REGISTER_BODY, MESSAGE, 202))),
        Route("/auth/verify-email", VerifyEmailResource(kernel), **public, openapi=ops(
            post=("Verify an email address with the emailed token", TOKEN_BODY, MESSAGE, 200))),
        Route("/auth/resend-verification", EmailFlowResource(kernel, selfservice.resend_verification), **public,
              openapi=ops(post=("Send the verification email again (generic answer)", EMAIL_BODY, MESSAGE, 202))),
        Route("/auth/forgot-password", EmailFlowResource(kernel, selfservice.forgot_password), **public,
              openapi=ops(post=("Email a password-reset link (generic answer)", EMAIL_BODY, MESSAGE, 202))),
        Route("/auth/reset-password",
              TokenPasswordResource(kernel, selfservice.reset_password, "The password has been changed"),
              **public, openapi=ops(post=("Set a new password with the emailed token", TOKEN_PASSWORD_BODY,
                                          MESSAGE, 200))),
        Route("/auth/accept-invite",
              TokenPasswordResource(kernel, selfservice.accept_invite, "The invitation is accepted"),
              **public, openapi=ops(post=("Accept an invitation and choose a password", TOKEN_PASSWORD_BODY,
                                          MESSAGE, 200))),
    ]
