"""Sending through one shared app and one real SMTP server (aiosmtpd) for the module, a site and
fresh addresses per test: what docs/email.md promises of a send's answer and its messages, the
send's validation branches not shown elsewhere, the queue's pruned batches, and the unsubscribe
routes' refusals."""

from __future__ import annotations

import datetime as dt
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_asyncio
from sqlalchemy import update

from kernel.testing import running_mailbox, shared_site_with
from plugins.email import render, sending
from plugins.email.tables import batches

INLINE = {"subject": "Hi", "text": "Body"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def smtp_site(svc_shared_db, svc_template_db, tmp_path_factory):
    """A shared app sending to the module's mailbox (``.mailbox``)."""
    with running_mailbox() as box:
        env = {"SVC_EMAIL_FROM": "News <news@example.com>", "SVC_EMAIL_BASE_URL": "https://api.example.com"}
        async with shared_site_with(
            svc_shared_db,
            svc_template_db,
            tmp_path_factory,
            smtp_host="127.0.0.1",
            smtp_port=box.port,
            env=env,
        ) as shared:
            shared.mailbox = box
            yield shared


def _addresses(n=1):
    tag = uuid.uuid4().hex[:8]
    return [f"r{i}-{tag}@example.com" for i in range(n)]


def _received(smtp_site, *addresses):
    """The envelopes the mailbox got for any of ``addresses``."""
    return [e for e in smtp_site.mailbox.envelopes if set(e.rcpt_tos) & set(addresses)]


async def test_a_marketing_send_to_only_suppressed_addresses_sends_nothing(smtp_site):
    calls = await smtp_site.new_site("em")
    to = _addresses(2)
    for address in to:
        await calls.ok("post", "/email/suppressions", 201, json={"email": address.upper()})
    answer = await calls.ok("post", "/email/send", json={"to": to, "inline": INLINE, "category": "marketing"})
    assert answer == {
        "category": "marketing",
        "queued": 0,
        "sent": 0,
        "failed": 0,
        "suppressed": 2,
        "withoutConsent": 0,
        "messageIds": [],
        "batchId": None,
    }
    assert _received(smtp_site, *to) == []  # the send answered after SMTP; nothing can arrive later


async def test_a_transactional_send_ignores_the_suppression_list(smtp_site):
    calls = await smtp_site.new_site("em")
    [to] = _addresses()
    await calls.ok("post", "/email/suppressions", 201, json={"email": to})
    answer = await calls.ok("post", "/email/send", json={"to": [to], "inline": INLINE})
    assert (answer["sent"], answer["suppressed"]) == (1, 0)
    [message] = smtp_site.mailbox.messages(to)
    assert message["List-Unsubscribe"] is None and message["Message-ID"] == answer["messageIds"][0]


async def test_a_marketing_message_is_one_per_recipient_with_its_own_link(smtp_site):
    calls = await smtp_site.new_site("em")
    to = _addresses(2)
    answer = await calls.ok(
        "post",
        "/email/send",
        json={
            "to": to,
            "category": "marketing",
            "inline": {"subject": "Sale", "html": '<p><a href="{{ unsubscribeUrl }}">Leave</a></p>'},
        },
    )
    assert answer["sent"] == 2 and len(answer["messageIds"]) == 2
    for address in to:
        [message] = smtp_site.mailbox.messages(address)
        assert message["To"] == address and message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        link = message["List-Unsubscribe"].strip("<>")
        token = parse_qs(urlsplit(link).query)["token"][0]
        html = message.get_body(("html",)).get_content()
        assert f'href="{render.escape_url(link)}"' in html, html
        # The link unsubscribes its own recipient, in its own site.
        resp = await smtp_site.app.client.post("/api/v1/email/unsubscribe", params={"token": token})
        assert resp.json()["data"] == {"unsubscribed": True, "changed": True}
    assert sorted(s["email"] for s in await calls.ok("get", "/email/suppressions")) == sorted(to)


async def test_an_unknown_template_key_is_404_and_sends_nothing(smtp_site):
    calls = await smtp_site.new_site("em")
    to = _addresses()
    await calls.err("post", "/email/send", 404, "NOT_FOUND", json={"to": to, "templateKey": "no-such"})
    await calls.err("post", "/email/send", 404, "NOT_FOUND", json={"to": to, "templateKey": "Not A Key"})
    assert _received(smtp_site, *to) == []


async def test_a_send_uses_the_templates_layout(smtp_site):
    calls = await smtp_site.new_site("em")
    layout = await calls.ok(
        "post", "/email/layouts", 201, json={"name": "B", "html": "<div>{{content}}<p>Acme</p></div>"}
    )
    await calls.ok(
        "post",
        "/email/templates",
        201,
        json={
            "key": "hi",
            "name": "n",
            "subject": "Hi {{ who }}",
            "html": "<p>Hello {{ who }}</p>",
            "layoutId": layout["id"],
        },
    )
    [to] = _addresses()
    await calls.ok("post", "/email/send", json={"to": [to], "templateKey": "hi", "variables": {"who": "Ann"}})
    [message] = smtp_site.mailbox.messages(to)
    assert message["Subject"] == "Hi Ann"
    assert message.get_body(("html",)).get_content().strip() == "<div><p>Hello Ann</p><p>Acme</p></div>"
    assert "Hello Ann" in message.get_body(("plain",)).get_content()


async def test_the_test_message_names_the_site(smtp_site):
    calls = await smtp_site.new_site("em")
    [to] = _addresses()
    answer = await calls.ok("post", "/email/test", json={"to": f"Ops <{to}>"})
    [message] = smtp_site.mailbox.messages(to)
    site = await calls.ok("get", f"/sites/{calls.headers['X-Svc-Site']}")
    assert message["Subject"] == f"Test email from {site['name']}"
    assert (answer["sent"], answer["messageId"]) == (1, message["Message-ID"])


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"replyTo": 5}, ["replyTo"]),
        ({"cc": [f"c{i}@example.com" for i in range(51)]}, ["cc"]),
        ({"inline": {"subject": "s" * 999, "text": "t"}}, ["inline", "subject"]),
        ({"inline": {"subject": "s", "html": 5}}, ["inline", "html"]),
        ({"inline": {"subject": "s", "text": "", "html": ""}}, ["inline", "html"]),
        ({"variables": {"a": "x" * 100_001}}, ["variables"]),
        ({"templateKey": None, "inline": None}, ["inline"]),
    ],
)
async def test_a_send_branch_not_covered_elsewhere_is_refused(smtp_site, body, path):
    to = _addresses()
    await smtp_site.calls.err(
        "post",
        "/email/send",
        400,
        "VALIDATION_FAILED",
        path_is=path,
        json={"to": to, "inline": INLINE, **body},
    )
    assert _received(smtp_site, *to) == []


async def test_a_pruned_batch_sends_nothing(smtp_site):
    calls = await smtp_site.new_site("em")
    to = _addresses(21)  # above the default SVC_EMAIL_QUEUE_THRESHOLD (20)
    answer = await calls.ok("post", "/email/send", 202, json={"to": to, "inline": INLINE})
    kernel = smtp_site.app.kernel
    async with kernel.db.begin() as conn:  # a week and a day later
        await conn.execute(
            update(batches)
            .where(batches.c.id == answer["batchId"])
            .values(created_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=8))
        )
    await sending.prune_job(kernel)
    await kernel.jobs.run_due(periodic=False)
    assert _received(smtp_site, *to) == []


async def test_a_queued_transactional_send_is_one_message_to_all(smtp_site):
    calls = await smtp_site.new_site("em")
    to = _addresses(21)
    answer = await calls.ok("post", "/email/send", 202, json={"to": to, "inline": INLINE})
    assert (answer["queued"], answer["sent"], answer["messageIds"]) == (21, 0, [])
    await smtp_site.app.kernel.jobs.run_due(periodic=False)
    [envelope] = _received(smtp_site, *to)
    assert sorted(envelope.rcpt_tos) == sorted(to)


async def test_an_unsubscribe_without_a_token_is_refused(smtp_site):
    client = smtp_site.app.client
    resp = await client.post(
        "/api/v1/email/unsubscribe",
        content=b"other=1",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    error = resp.json()["errors"][0]
    assert (resp.status_code, error["code"], error["path"]) == (400, "VALIDATION_FAILED", ["token"])
    page = await client.get("/api/v1/email/unsubscribe")
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    undo = await client.post("/api/v1/email/unsubscribe/undo", data={"token": "x.y.z"})
    assert undo.status_code == 400 and undo.headers["x-frame-options"] == "DENY"


async def test_an_undo_of_an_address_never_suppressed_changes_nothing(smtp_site):
    calls = await smtp_site.new_site("em")
    [to] = _addresses()
    token = sending.tokens.issue(
        smtp_site.app.kernel.settings.resolved_jwt_secret(), calls.headers["X-Svc-Site"], to
    )
    page = await smtp_site.app.client.post("/api/v1/email/unsubscribe/undo", data={"token": token})
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    assert await calls.ok("get", "/email/suppressions") == []
    audit = await calls.ok("get", "/audit", params={"action": "email_unsuppressed"})
    assert audit == []
