"""Reset-password and accept-invite tokens are bound to the site that mailed them, like
verify-email (issue 11, A7): presented in another site they are 400 with the one generic
message, and they stay usable in their own site."""

from __future__ import annotations

import uuid

import pytest_asyncio

from kernel.testing import run_due_jobs
from plugins.accounts.selfservice.onetime import INVALID_MESSAGE

API = "/api/v1"


@pytest_asyncio.fixture
async def svc_app(make_app, mailbox):
    """The default app, mailing through the test's SMTP server."""
    return await make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port)


def in_site(site: str) -> dict[str, str]:
    return {"X-Svc-Site": site}


def assert_invalid_token(resp) -> None:
    assert resp.status_code == 400, resp.text
    err = resp.json()["errors"][0]
    assert err["code"] == "VALIDATION_FAILED" and err["path"] == ["token"] and err["message"] == INVALID_MESSAGE


async def login_status(client, site: str, email: str, password: str) -> int:
    resp = await client.post(f"{API}/auth/login", json={"email": email, "password": password}, headers=in_site(site))
    return resp.status_code


async def test_a_reset_token_works_only_in_its_site(svc_app, client, site, site_b, mailbox, make_member):
    member = await make_member([site, site_b])  # a member of both: membership is not what refuses
    await client.post(f"{API}/auth/forgot-password", json={"email": member.email}, headers=in_site(site))
    await run_due_jobs(svc_app, periodic=False)  # the job queue sends the email
    token = mailbox.token((await mailbox.wait_for(1, to=member.email))[0])

    resp = await client.post(f"{API}/auth/reset-password", json={"token": token, "password": "taken-over-1"},
                             headers=in_site(site_b))
    assert_invalid_token(resp)
    assert await login_status(client, site_b, member.email, member.password) == 200
    assert await login_status(client, site_b, member.email, "taken-over-1") == 401

    resp = await client.post(f"{API}/auth/reset-password", json={"token": token, "password": "brand-new-pass"},
                             headers=in_site(site))
    assert resp.status_code == 200, resp.text
    assert await login_status(client, site, member.email, "brand-new-pass") == 200


async def test_an_invitation_token_works_only_in_its_site(client, site, site_b, site_headers, site_b_headers,
                                                          mailbox):
    email = f"guest-{uuid.uuid4().hex[:8]}@example.com"
    assert (await client.post(f"{API}/users/invite", json={"email": email}, headers=site_headers)).status_code == 201
    token_a = mailbox.token((await mailbox.wait_for(1, to=email))[0])
    # Invited to B as well: B has a pending invitation of its own, and still refuses A's token.
    assert (await client.post(f"{API}/users/invite", json={"email": email},
                              headers=site_b_headers)).status_code == 201
    await mailbox.wait_for(2, to=email)

    resp = await client.post(f"{API}/auth/accept-invite", json={"token": token_a, "password": "guest-pass-1"},
                             headers=in_site(site_b))
    assert_invalid_token(resp)
    assert await login_status(client, site_b, email, "guest-pass-1") == 401

    resp = await client.post(f"{API}/auth/accept-invite", json={"token": token_a, "password": "guest-pass-1"},
                             headers=in_site(site))
    assert resp.status_code == 200, resp.text
    assert await login_status(client, site, email, "guest-pass-1") == 200
