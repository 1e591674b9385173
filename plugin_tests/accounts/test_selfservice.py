"""Self-service: register, verify email, resend, forgot and reset password, against a real
SMTP peer (aiosmtpd) so the emailed links are read the way a person would read them.

The tests share the module's app and SMTP server (kernel/testing/shared.py: the auth rate limit
off), each in a new site, reading only the mail to addresses of its own; the app without SMTP and
the one with a rate limit are their tests' own."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from sqlalchemy import select, update

from kernel.auth import passwords
from kernel.testing import run_due_jobs
from kernel.testing import shared as testing_shared
from plugins.access.api import membership, role_by_system_key
from plugins.accounts.selfservice import mail_queue, selfservice
from plugins.accounts.tables import one_time_tokens, users

API = "/api/v1"


svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site
mailbox, shared_site = testing_shared.module_mailbox, testing_shared.mailing_shared_site


def site_h(site: str) -> dict[str, str]:
    return {"X-Svc-Site": site}


def new_email() -> str:
    return f"p-{uuid.uuid4().hex[:10]}@example.com"


async def register(client, site, email, password="sign-up-pass-1", **extra):
    return await client.post(f"{API}/auth/register", json={"email": email, "password": password, **extra},
                             headers=site_h(site))


async def mails(app, mailbox, count, to):
    """The account emails to ``to``, once the job queue has sent them (tests run no job worker)."""
    await run_due_jobs(app, periodic=False)
    return await mailbox.wait_for(count, to=to)


async def queued_emails(app) -> list:
    """Runs of the account email job that were due (and are now done)."""
    return [run for run in await run_due_jobs(app, periodic=False) if run.name == mail_queue.JOB]


async def login(client, site, email, password):
    return await client.post(f"{API}/auth/login", json={"email": email, "password": password},
                             headers=site_h(site))


async def test_register_verify_login(svc_app, client, site, mailbox):
    email = new_email()
    resp = await register(client, site, email, firstName="Ada")
    assert resp.status_code == 202
    assert resp.json() == {"data": {"message": selfservice.REGISTERED}}
    assert (await login(client, site, email, "sign-up-pass-1")).status_code == 401  # not verified yet

    [message] = await mails(svc_app, mailbox, 1, email)
    text = message.get_content()
    assert "http://127.0.0.1:8000/verify-email?token=" in text and f"site={site}" in text
    resp = await client.post(f"{API}/auth/verify-email", json={"token": mailbox.token(message)},
                             headers=site_h(site))
    assert resp.status_code == 200, resp.text

    resp = await login(client, site, email, "sign-up-pass-1")
    assert resp.status_code == 200, resp.text
    user = resp.json()["data"]["user"]
    assert user["email"] == email and user["firstName"] == "Ada"
    async with svc_app.kernel.db.connect() as conn:
        role = await role_by_system_key(conn, site, "subscriber")
        assert (await membership(conn, site, user["id"]))["role_id"] == role["id"]
        row = (await conn.execute(select(users).where(users.c.id == user["id"]))).mappings().one()
    assert row["status"] == "active" and row["password_hash"].startswith("$argon2id$")


async def test_same_answer_and_same_work_for_known_and_unknown_address(svc_app, client, site, mailbox, make_member,
                                                                      monkeypatch):
    calls: list[str] = []
    real = passwords.hash_password_async

    async def spy(password: str) -> str:
        calls.append(password)
        return await real(password)

    monkeypatch.setattr(passwords, "hash_password_async", spy)
    member = await make_member(site)
    known = await register(client, site, member.email, "another-pass-1")
    assert len(calls) == 1
    unknown = await register(client, site, new_email(), "another-pass-1")
    assert len(calls) == 2  # one argon2 hash on each path: the same work
    assert known.status_code == unknown.status_code == 202
    assert known.json() == unknown.json()
    assert set(known.headers) == set(unknown.headers)

    # The known account is unchanged and told about the attempt, with no link (already a member).
    [notice] = await mails(svc_app, mailbox, 1, member.email)
    assert "already has an account" in notice.get_content() and "token=" not in notice.get_content()
    assert (await login(client, site, member.email, member.password)).status_code == 200
    assert (await login(client, site, member.email, "another-pass-1")).status_code == 401


async def test_existing_identity_joins_another_site_by_verifying(svc_app, client, admin_headers, site, mailbox,
                                                                 make_member):
    other = f"s-{uuid.uuid4().hex[:10]}"
    assert (await client.post(f"{API}/sites", json={"id": other, "name": "Other"},
                              headers=admin_headers)).status_code == 201
    member = await make_member(site)
    assert (await register(client, other, member.email, "ignored-pass-1")).status_code == 202
    [message] = await mails(svc_app, mailbox, 1, member.email)
    assert (await login(client, other, member.email, member.password)).status_code == 401  # not a member yet
    resp = await client.post(f"{API}/auth/verify-email", json={"token": mailbox.token(message)},
                             headers=site_h(other))
    assert resp.status_code == 200
    assert (await login(client, other, member.email, member.password)).status_code == 200
    assert (await login(client, other, member.email, "ignored-pass-1")).status_code == 401


async def test_unverified_sign_up_again_uses_the_latest_password(svc_app, client, site, mailbox):
    email = new_email()
    await register(client, site, email, "first-pass-1")
    (first,) = await mails(svc_app, mailbox, 1, email)
    await register(client, site, email, "second-pass-2")
    await register(client, site, email, "third-pass-33")
    await register(client, site, email, "second-pass-2")  # asked again before it left: one email
    first, second = await mails(svc_app, mailbox, 2, email)
    assert await queued_emails(svc_app) == []
    resp = await client.post(f"{API}/auth/verify-email", json={"token": mailbox.token(first)}, headers=site_h(site))
    assert resp.status_code == 400  # the newer email's link replaced it
    resp = await client.post(f"{API}/auth/verify-email", json={"token": mailbox.token(second)}, headers=site_h(site))
    assert resp.status_code == 200
    assert (await login(client, site, email, "first-pass-1")).status_code == 401
    assert (await login(client, site, email, "second-pass-2")).status_code == 200


async def test_verify_token_is_single_use_and_site_bound(svc_app, client, admin_headers, site, mailbox):
    other = f"s-{uuid.uuid4().hex[:10]}"
    await client.post(f"{API}/sites", json={"id": other, "name": "Other"}, headers=admin_headers)
    email = new_email()
    await register(client, site, email)
    token = mailbox.token((await mails(svc_app, mailbox, 1, email))[0])
    resp = await client.post(f"{API}/auth/verify-email", json={"token": token}, headers=site_h(other))
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    assert (await client.post(f"{API}/auth/verify-email", json={"token": token},
                              headers=site_h(site))).status_code == 200
    again = await client.post(f"{API}/auth/verify-email", json={"token": token}, headers=site_h(site))
    assert again.status_code == 400
    assert again.json()["errors"][0]["message"] == "The link is invalid or has expired"


async def test_resend_verification(svc_app, client, site, mailbox):
    email = new_email()
    await register(client, site, email)
    (first,) = await mails(svc_app, mailbox, 1, email)  # the registration's link, before the resend
    resp = await client.post(f"{API}/auth/resend-verification", json={"email": email.upper()}, headers=site_h(site))
    assert resp.status_code == 202 and resp.json() == {"data": {"message": selfservice.EMAIL_SENT}}
    unknown = await client.post(f"{API}/auth/resend-verification", json={"email": new_email()},
                                headers=site_h(site))
    assert unknown.status_code == 202 and unknown.json() == resp.json()
    (resent,) = [m for m in await mails(svc_app, mailbox, 2, email) if mailbox.token(m) != mailbox.token(first)]
    assert (await client.post(f"{API}/auth/verify-email", json={"token": mailbox.token(resent)},
                              headers=site_h(site))).status_code == 200


async def test_forgot_and_reset_password(svc_app, client, site, mailbox, make_member, login_as):
    member = await make_member(site)
    session = await login_as(member.email, site=site)
    resp = await client.post(f"{API}/auth/forgot-password", json={"email": member.email}, headers=site_h(site))
    assert resp.status_code == 202 and resp.json() == {"data": {"message": selfservice.EMAIL_SENT}}
    [message] = await mails(svc_app, mailbox, 1, member.email)
    assert "/reset-password?token=" in message.get_content()
    token = mailbox.token(message)

    resp = await client.post(f"{API}/auth/reset-password", json={"token": token, "password": "brand-new-pass"},
                             headers=site_h(site))
    assert resp.status_code == 200, resp.text
    assert (await login(client, site, member.email, member.password)).status_code == 401
    assert (await login(client, site, member.email, "brand-new-pass")).status_code == 200
    # Every earlier session is over: the refresh token and the access token (token version).
    refreshed = await client.post(f"{API}/auth/refresh", json={"refreshToken": session["refreshToken"]},
                                  headers=site_h(site))
    assert refreshed.status_code == 401
    me = await client.get(f"{API}/auth/me", headers={"Authorization": f"Bearer {session['token']}"})
    assert me.status_code == 401
    reuse = await client.post(f"{API}/auth/reset-password", json={"token": token, "password": "third-pass-33"},
                              headers=site_h(site))
    assert reuse.status_code == 400 and reuse.json()["errors"][0]["code"] == "VALIDATION_FAILED"


async def test_forgot_password_for_unknown_or_foreign_address_sends_nothing(svc_app, client, site, mailbox,
                                                                            make_member):
    outsider = await make_member(None)  # an identity that is no member of this site
    await run_due_jobs(svc_app, periodic=False)  # what the module's earlier tests left queued
    received = len(mailbox.envelopes)
    answers = []
    for email in (new_email(), outsider.email):
        resp = await client.post(f"{API}/auth/forgot-password", json={"email": email}, headers=site_h(site))
        answers.append((resp.status_code, resp.json()))
    assert answers[0] == answers[1] == (202, {"data": {"message": selfservice.EMAIL_SENT}})
    assert await queued_emails(svc_app) == []  # nothing was queued for either
    assert mailbox.envelopes[received:] == []


async def test_expired_reset_token_is_refused(svc_app, client, site, mailbox, make_member):
    member = await make_member(site)
    await client.post(f"{API}/auth/forgot-password", json={"email": member.email}, headers=site_h(site))
    token = mailbox.token((await mails(svc_app, mailbox, 1, member.email))[0])
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(update(one_time_tokens).where(one_time_tokens.c.user_id == member.id)
                           .values(expires_at=past))
    resp = await client.post(f"{API}/auth/reset-password", json={"token": token, "password": "brand-new-pass"},
                             headers=site_h(site))
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["token"]
    assert (await login(client, site, member.email, member.password)).status_code == 200


async def test_token_lifetimes_follow_the_settings(svc_app, client, site, mailbox, make_member):
    member = await make_member(site)
    await client.post(f"{API}/auth/forgot-password", json={"email": member.email}, headers=site_h(site))
    await mails(svc_app, mailbox, 1, member.email)
    async with svc_app.kernel.db.connect() as conn:
        row = (await conn.execute(select(one_time_tokens).where(one_time_tokens.c.user_id == member.id)))\
            .mappings().one()
    assert row["purpose"] == "reset_password" and len(row["token_hash"]) == 64
    assert abs((row["expires_at"] - row["created_at"]).total_seconds() - 3600) < 5


async def test_a_verification_token_cannot_reset_a_password(svc_app, client, site, mailbox):
    email = new_email()
    await register(client, site, email)
    token = mailbox.token((await mails(svc_app, mailbox, 1, email))[0])
    resp = await client.post(f"{API}/auth/reset-password", json={"token": token, "password": "hijack-pass-1"},
                             headers=site_h(site))
    assert resp.status_code == 400
    assert (await client.post(f"{API}/auth/verify-email", json={"token": token},
                              headers=site_h(site))).status_code == 200
    assert (await login(client, site, email, "hijack-pass-1")).status_code == 401


async def test_without_smtp_the_answers_stay_generic(make_app):
    app = await make_app()  # no SVC_SMTP_HOST: degraded email
    token = await app.login()
    site = f"s-{uuid.uuid4().hex[:10]}"
    await app.client.post(f"{API}/sites", json={"id": site, "name": "S"}, headers={"Authorization": f"Bearer {token}"})
    resp = await register(app.client, site, new_email())
    assert resp.status_code == 202 and resp.json() == {"data": {"message": selfservice.REGISTERED}}
    resp = await app.client.post(f"{API}/auth/forgot-password", json={"email": "admin@example.com"},
                                 headers=site_h(site))
    assert resp.status_code == 202
    runs = await queued_emails(app)
    assert [run.ok for run in runs] == [True, True]  # no SMTP host: logged, not retried


async def test_auth_rate_limit_applies(make_app, mailbox):
    app = await make_app(rate_limit_auth=3, smtp_host="127.0.0.1", smtp_port=mailbox.port)
    token = await app.login()  # counts too when the IP bucket spans sites
    site = f"s-{uuid.uuid4().hex[:10]}"
    await app.client.post(f"{API}/sites", json={"id": site, "name": "S"}, headers={"Authorization": f"Bearer {token}"})
    codes = [(await app.client.post(f"{API}/auth/forgot-password", json={"email": new_email()},
                                    headers=site_h(site))).status_code for _ in range(4)]
    assert codes[0] == 202 and codes[-1] == 429 and codes == sorted(codes)


@pytest.mark.parametrize(("path", "body"), [
    ("register", {"email": "a@example.com"}),
    ("register", {"email": "a@example.com", "password": "short"}),
    ("register", {"email": "not-an-email", "password": "long-enough-1"}),
    ("register", {"email": "a@@example.com", "password": "long-enough-1"}),
    ("register", {"email": "a@example.com", "password": "long-enough-1", "isInstanceAdmin": True}),
    ("register", {"email": "a@example.com", "password": "long-enough-1", "status": "active"}),
    ("register", {"email": "a@example.com", "password": "x" * 1025}),
    ("register", {"email": "a@example.com", "password": "long-enough-1", "firstName": 5}),
    ("register", {"email": ["a@example.com"], "password": "long-enough-1"}),
    ("verify-email", {"token": 12345}),
    ("verify-email", {}),
    ("verify-email", {"token": "x" * 40}),
    ("resend-verification", {"email": None}),
    ("forgot-password", {"email": "a@example.com", "extra": 1}),
    ("reset-password", {"token": "x" * 40, "password": "short"}),
    ("reset-password", {"token": "x" * 40, "password": "long-enough-1"}),
    ("reset-password", {"password": "long-enough-1"}),
    ("accept-invite", {"token": "x" * 40, "password": "long-enough-1"}),
    ("accept-invite", {"token": "", "password": "long-enough-1"}),
])
async def test_bad_input_is_validation_failed(shared_site, path, body):
    client, site = shared_site.app.client, shared_site.site
    resp = await client.post(f"{API}/auth/{path}", json=body, headers=site_h(site))
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


@pytest.mark.parametrize("path", ["register", "verify-email", "forgot-password", "reset-password"])
async def test_body_must_be_an_object_and_a_site_is_required(client, site, path):
    resp = await client.post(f"{API}/auth/{path}", content=b"[1]", headers={**site_h(site),
                                                                            "Content-Type": "application/json"})
    assert resp.status_code == 400
    resp = await client.post(f"{API}/auth/{path}", json={"email": "a@example.com", "password": "long-enough-1"})
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["headers", "X-Svc-Site"]
    resp = await client.post(f"{API}/auth/{path}", json={}, headers=site_h("no-such-site"))
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "SITE_NOT_FOUND"
