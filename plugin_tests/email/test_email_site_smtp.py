"""Per-site SMTP: a site's own server (a real aiosmtpd requiring AUTH) carries its mail, with the
password sealed by kernel.secrets and never answered; other sites keep the server's SMTP."""

from __future__ import annotations

import base64
import socket

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from sqlalchemy import text

from kernel.testing import ADMIN_EMAIL, Calls, Mailbox, new_member
from plugin_tests.email.conftest import smtp_app

KEY = base64.b64encode(b"k" * 32).decode()
PASSWORD = "site-smtp-password-31"


class AuthMailbox(Mailbox):
    """A mailbox that only takes mail after AUTH with the site's user and password."""

    def __init__(self) -> None:
        super().__init__()
        self.logins: list[tuple[str, bool]] = []

    def authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        ok = auth_data.login == b"site-user" and auth_data.password == PASSWORD.encode()
        self.logins.append((auth_data.login.decode(), ok))
        # handled=False: the server answers a refusal with 535 (aiosmtpd's default, handled=True,
        # answers nothing, and the client gave up only at its 10 s timeout).
        return AuthResult(success=ok, handled=False)


@pytest.fixture
def site_box():
    box = AuthMailbox()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        box.port = sock.getsockname()[1]
    controller = Controller(
        box,
        hostname="127.0.0.1",
        port=box.port,
        authenticator=box.authenticate,
        auth_require_tls=False,
        auth_required=True,
    )
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


async def test_a_site_sends_through_its_own_smtp_server(make_app, mailbox, site_box):
    app, calls, site = await smtp_app(
        make_app, mailbox, SVC_ENCRYPTION_KEY=KEY, SVC_OUTBOUND_ALLOW_NETWORKS="127.0.0.1/32"
    )
    admin = {"Authorization": calls.headers["Authorization"]}
    other = Calls(app.client, {**admin, "X-Svc-Site": await app.create_site(admin)})
    assert await calls.ok("get", "/email/smtp") is None
    body = {
        "host": "127.0.0.1",
        "port": site_box.port,
        "tls": "none",
        "username": "site-user",
        "password": PASSWORD,
        "from": "Site <hello@site.example>",
    }
    saved = await calls.ok("put", "/email/smtp", json=body)
    assert saved == {
        "host": "127.0.0.1",
        "port": site_box.port,
        "username": "site-user",
        "tls": "none",
        "from": "Site <hello@site.example>",
        "hasPassword": True,
        "updatedAt": saved["updatedAt"],
    }
    for path in ("/email/smtp", "/email/capabilities"):
        assert PASSWORD not in (await calls.call("get", path)).text
    async with app.kernel.db.engine.connect() as conn:
        stored = (
            await conn.execute(text("select password from svc_email_smtp where site_id = :s"), {"s": site})
        ).scalar()
    assert stored and PASSWORD not in stored  # sealed
    assert app.kernel.secrets.open(site, stored, purpose="email.smtp_password") == PASSWORD
    caps = await calls.ok("get", "/email/capabilities")
    assert caps["siteSmtp"] is True and caps["defaultFrom"] == "Site <hello@site.example>"

    sent = await calls.ok(
        "post", "/email/send", json={"to": ["ann@example.com"], "inline": {"subject": "Hi", "text": "Hello"}}
    )
    assert sent["sent"] == 1
    [message] = await site_box.wait_for(1)
    assert message["From"] == "Site <hello@site.example>" and message["Subject"] == "Hi"
    assert site_box.logins == [("site-user", True)]
    # The other site still uses the server's SMTP.
    await other.ok("post", "/email/test", json={"to": "bob@example.com"})
    [server_message] = await mailbox.wait_for(1)
    assert server_message["To"] == "bob@example.com" and len(site_box.envelopes) == 1

    # A PUT without the password keeps it (same host and user); a wrong one is a delivery failure.
    kept = await calls.ok(
        "put",
        "/email/smtp",
        json={**{k: v for k, v in body.items() if k != "password"}, "from": "New <new@site.example>"},
    )
    assert kept["hasPassword"] is True and kept["from"] == "New <new@site.example>"
    await calls.ok("post", "/email/test", json={"to": "cy@example.com"})
    await site_box.wait_for(2)
    await calls.ok("put", "/email/smtp", json={**body, "password": "wrong-password"})
    await calls.err("post", "/email/test", 502, "DELIVERY_FAILED", json={"to": "cy@example.com"})
    assert site_box.logins[-1] == ("site-user", False)

    # Another site cannot read or remove it; DELETE goes back to the server's SMTP.
    assert await other.ok("get", "/email/smtp") is None
    await other.ok("delete", "/email/smtp", status=204)
    assert (await calls.ok("get", "/email/smtp"))["host"] == "127.0.0.1"
    await calls.ok("delete", "/email/smtp", status=204)
    assert await calls.ok("get", "/email/smtp") is None
    await calls.ok("post", "/email/test", json={"to": "dee@example.com"})
    await mailbox.wait_for(1, to="dee@example.com")


async def test_bad_settings_and_refused_hosts(make_app, mailbox):
    _app, calls, _site = await smtp_app(make_app, mailbox, SVC_ENCRYPTION_KEY=KEY)
    await calls.err("put", "/email/smtp", 400, "VALIDATION_FAILED", json={"host": ""})
    await calls.err("put", "/email/smtp", 400, "VALIDATION_FAILED", json={"host": "a b"})
    await calls.err(
        "put", "/email/smtp", 400, "VALIDATION_FAILED", json={"host": "smtp.example.com", "port": 0}
    )
    await calls.err(
        "put", "/email/smtp", 400, "VALIDATION_FAILED", json={"host": "smtp.example.com", "tls": "ssl"}
    )
    await calls.err("put", "/email/smtp", 400, "VALIDATION_FAILED", json={"host": "smtp.example.com", "x": 1})
    await calls.err(
        "put",
        "/email/smtp",
        400,
        "VALIDATION_FAILED",
        json={"host": "smtp.example.com", "from": "not an address"},
    )
    # A tenant may not aim the server at loopback, private or metadata addresses.
    for host in ("10.0.0.5", "169.254.169.254", "0.0.0.0", "192.168.1.1"):
        resp = await calls.call("put", "/email/smtp", json={"host": host})
        assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["host"], host
    assert await calls.ok("get", "/email/smtp") is None


async def test_a_password_needs_the_encryption_key(make_app, mailbox):
    _app, calls, _site = await smtp_app(make_app, mailbox, SVC_OUTBOUND_ALLOW_NETWORKS="127.0.0.1/32")
    await calls.err(
        "put",
        "/email/smtp",
        400,
        "ENCRYPTION_KEY_REQUIRED",
        json={"host": "127.0.0.1", "port": mailbox.port, "username": "u", "password": "p"},
    )
    assert await calls.ok("get", "/email/smtp") is None


# -- close40: account emails through the site's own SMTP server
async def test_account_emails_leave_through_the_sites_own_smtp_server(make_app, mailbox, site_box, run_due_jobs):
    """Invitation (sent while the request waits), verification and password reset (queued jobs):
    each through the site's own server when it has one; another site's through the server's."""
    app, calls, site = await smtp_app(
        make_app, mailbox, SVC_ENCRYPTION_KEY=KEY, SVC_OUTBOUND_ALLOW_NETWORKS="127.0.0.1/32"
    )
    admin = {"Authorization": calls.headers["Authorization"]}
    other_site = await app.create_site(admin)
    other = Calls(app.client, {**admin, "X-Svc-Site": other_site})
    await calls.ok("put", "/email/smtp", json={"host": "127.0.0.1", "port": site_box.port, "tls": "none",
                                                "username": "site-user", "password": PASSWORD,
                                                "from": "Site <hello@site.example>"})

    async def jobs() -> None:
        await run_due_jobs(app.kernel, periodic=False)

    # Invitation: in the request.
    await calls.ok("post", "/users/invite", status=201, json={"email": "invitee@example.org"})
    [invite] = await site_box.wait_for(1, to="invitee@example.org")
    assert invite["From"] == "Site <hello@site.example>" and "accept-invite?token=" in invite.get_content()
    # Verification: the sign-up's queued job.
    resp = await app.client.post("/api/v1/auth/register", json={"email": "signup@example.org",
                                                                 "password": "sign-up-pass-1"},
                                 headers={"X-Svc-Site": site})
    assert resp.status_code == 202, resp.text
    await jobs()
    [verify] = await site_box.wait_for(1, to="signup@example.org")
    assert "verify-email?token=" in verify.get_content()
    # Password reset: the invitee accepts, then forgets the password.
    token = Mailbox.token(invite)
    resp = await app.client.post("/api/v1/auth/accept-invite", json={"token": token, "password": "invitee-pass-1"},
                                 headers={"X-Svc-Site": site})
    assert resp.status_code == 200, resp.text
    resp = await app.client.post("/api/v1/auth/forgot-password", json={"email": "invitee@example.org"},
                                 headers={"X-Svc-Site": site})
    assert resp.status_code == 202, resp.text
    await jobs()
    [_, reset] = await site_box.wait_for(2, to="invitee@example.org")
    assert "reset-password?token=" in reset.get_content()
    assert all(ok for _, ok in site_box.logins) and len(site_box.logins) == 3
    assert mailbox.messages() == []  # none of the site's account emails used the server's SMTP

    # Another site without settings: the server's SMTP.
    await other.ok("post", "/users/invite", status=201, json={"email": "elsewhere@example.org"})
    [fallback] = await mailbox.wait_for(1, to="elsewhere@example.org")
    assert "accept-invite?token=" in fallback.get_content()
    assert site_box.messages("elsewhere@example.org") == []

    # An identity that reaches beyond the site (the instance admin; a member of another site too)
    # never gets a live link through the site's server, whose operator would read it: the
    # server's SMTP carries it.
    shared = await new_member(app, [site, other_site], "subscriber", email="shared@example.org", login=False)
    for email in (ADMIN_EMAIL, shared.email):
        resp = await app.client.post("/api/v1/auth/forgot-password", json={"email": email},
                                     headers={"X-Svc-Site": site})
        assert resp.status_code == 202, resp.text
    await jobs()
    for email in (ADMIN_EMAIL, shared.email):
        [reset] = await mailbox.wait_for(1, to=email)
        assert "reset-password?token=" in reset.get_content()
        assert site_box.messages(email) == []
    await calls.ok("post", "/users/invite", status=201, json={"email": "elsewhere@example.org"})
    [_, added] = await mailbox.wait_for(2, to="elsewhere@example.org")
    assert "accept-invite?token=" in added.get_content() and site_box.messages("elsewhere@example.org") == []

    # Settings that no longer open fail the invitation (502), never falling back to the server's.
    async with app.kernel.db.begin() as conn:
        await conn.execute(text("update svc_email_smtp set password = 'v1:broken' where site_id = :s"), {"s": site})
    await calls.err("post", "/users/invite", 502, "DELIVERY_FAILED", json={"email": "late@example.org"})
    assert mailbox.messages("late@example.org") == [] and site_box.messages("late@example.org") == []
