"""Layouts, templates and sending through a real SMTP server (aiosmtpd): rendering is sandboxed
and escaped, html is sanitised, a text part is derived, marketing mail drops suppressed
recipients and carries RFC 8058 headers, header injection is refused before anything is sent."""

from __future__ import annotations

import contextlib
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from kernel.policy.audit import audit_log
from kernel.testing import free_port
from plugin_tests.email.conftest import LAYOUT, smtp_app


def _token(message) -> str:
    url = message["List-Unsubscribe"].strip("<>")
    assert url.startswith("https://api.example.com/api/v1/email/unsubscribe?token=")
    return parse_qs(urlsplit(url).query)["token"][0]


async def _audits(app, site, action):
    async with app.kernel.db.engine.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(audit_log.c.site_id == site,
                                                           audit_log.c.action == action))).mappings().all()
    return rows


async def test_templates_render_safely_and_send(smtp, mailbox):
    app, calls, site = smtp
    caps = await calls.ok("get", "/email/capabilities")
    assert caps["configured"] is True and caps["defaultFrom"] == "News <news@example.com>"

    layout = await calls.ok("post", "/email/layouts", 201, json={"name": "Shell", "html": LAYOUT})
    body = {"key": "welcome", "name": "Welcome", "subject": "Hello {{ name }}", "layoutId": layout["id"],
            "html": '<p>Hi <b>{{ name }}</b>, see <a href="https://example.com/o/{{ order.id }}">order</a>'
                    '</p><script>alert(1)</script><img src="x" onerror="alert(2)">'}
    template = await calls.ok("post", "/email/templates", 201, json=body)
    assert template["key"] == "welcome" and template["layoutId"] == layout["id"] and template["text"] is None
    await calls.err("post", "/email/templates", 409, "CONFLICT", json=body)
    listed = await calls.ok("get", "/email/templates")
    assert [t["key"] for t in listed] == ["welcome"]

    hostile = '<img src=x onerror=alert(1)>{{7*7}}'
    variables = {"name": hostile, "order": {"id": 42}, "site": "Shop"}
    shown = await calls.ok("post", "/email/templates/welcome/preview", json={"variables": variables})
    assert shown["subject"] == "Hello <img src=x onerror=alert(1)>{{7*7}}"  # text: shown, never run
    html = shown["html"]
    assert "<script" not in html and 'onerror="' not in html and "onclick" not in html and "alert(2)" not in html
    assert "<img src=x" not in html and '<img src="x">' in html
    assert "&lt;img src=x onerror=alert(1)&gt;{{7*7}}" in html and "49" not in html
    assert 'href="https://example.com/o/42"' in html and 'style="color:#333"' in html
    assert "Footer of Shop" in html
    assert "Hi <img src=x onerror=alert(1)>{{7*7}}, see order (https://example.com/o/42)" in shown["text"]
    assert mailbox.envelopes == []  # preview sends nothing

    sent = await calls.ok("post", "/email/send", json={
        "to": ["Ann <ann@example.com>", "bob@example.com"], "cc": ["carl@example.com"],
        "replyTo": "help@example.com", "templateKey": "welcome", "variables": variables})
    assert sent["sent"] == 2 and sent["queued"] == 0 and sent["suppressed"] == 0 and len(sent["messageIds"]) == 1
    [message] = await mailbox.wait_for(1)
    assert message["To"] == "Ann <ann@example.com>, bob@example.com" and message["Cc"] == "carl@example.com"
    assert message["Reply-To"] == "help@example.com" and message["From"] == "News <news@example.com>"
    assert message["List-Unsubscribe"] is None  # transactional
    assert sorted(mailbox.envelopes[0].rcpt_tos) == ["ann@example.com", "bob@example.com", "carl@example.com"]
    parts = {p.get_content_type(): p.get_content() for p in message.iter_parts()}
    assert "&lt;img src=x onerror=alert(1)&gt;" in parts["text/html"] and "<script" not in parts["text/html"]
    assert "see order (https://example.com/o/42)" in parts["text/plain"]

    # Updating and deleting: a layout in use cannot go; a template can.
    await calls.ok("patch", f"/email/templates/{template['id']}", json={"text": "Plain {{ name }}"})
    await calls.err("delete", f"/email/layouts/{layout['id']}", 409, "CONFLICT")
    patched = await calls.ok("patch", f"/email/layouts/{layout['id']}", json={"name": "Shell 2"})
    assert patched["name"] == "Shell 2"
    shown = await calls.ok("post", "/email/templates/welcome/preview", json={"variables": {"name": "Zoë"}})
    assert shown["text"] == "Plain Zoë"
    await calls.ok("delete", f"/email/templates/{template['id']}", 204)
    await calls.ok("delete", f"/email/layouts/{layout['id']}", 204)
    await calls.err("post", "/email/send", 404, "NOT_FOUND", json={"to": ["a@example.com"], "templateKey": "welcome"})
    await calls.err("post", "/email/templates/welcome/preview", 404, "NOT_FOUND", json={})

    # Other plugins (a flow's mail operation) send through the same path, with the same checks.
    from kernel import ApiError
    from plugins.email import api as email_api

    status, answer = await email_api.send(app.kernel, site, {"to": ["flow@example.com"],
                                                             "inline": {"subject": "From a flow", "text": "x"}})
    assert status == 200 and answer["sent"] == 1
    assert (await mailbox.wait_for(1, to="flow@example.com"))[0]["Subject"] == "From a flow"
    with pytest.raises(ApiError) as refused:
        await email_api.send(app.kernel, site, {"to": ["flow@example.com"], "templateKey": "welcome"})
    assert refused.value.status == 404 and refused.value.code == "NOT_FOUND"

    test = await calls.ok("post", "/email/test", json={"to": "ops@example.com"})
    assert test["sent"] == 1
    [probe] = await mailbox.wait_for(1, to="ops@example.com")
    assert probe["Subject"].startswith("Test email from")


async def test_marketing_suppression_and_one_click(smtp, mailbox):
    app, calls, site = smtp
    await calls.ok("post", "/email/suppressions", 201, json={"email": "Gone@Example.com", "reason": "bounced"})
    await calls.err("post", "/email/suppressions", 409, "CONFLICT", json={"email": "gone@example.com"})
    inline = {"subject": "News for {{ name }}",
              "html": '<p>Hello {{ name }}</p><p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>'}
    answer = await calls.ok("post", "/email/send", json={
        "to": ["ann@example.com", "GONE@example.COM", "Bob <bob@example.com>"], "inline": inline,
        "variables": {"name": "friend"}, "category": "marketing"})
    assert (answer["sent"], answer["suppressed"], answer["queued"]) == (2, 1, 0)
    messages = await mailbox.wait_for(2)
    assert sorted(r for e in mailbox.envelopes for r in e.rcpt_tos) == ["ann@example.com", "bob@example.com"]
    for message in messages:
        assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        token = _token(message)
        html = message.get_body(("html",)).get_content()
        assert "token=" + token in html  # the page link is the header's link (&amp;-escaped where needed)
    bob = next(m for m in messages if "bob" in m["To"])

    # RFC 8058: a POST with the form body the mailbox provider sends, the token in the query; no cookie.
    one_click = await app.client.post(f"/api/v1/email/unsubscribe?token={_token(bob)}",
                                       content="List-Unsubscribe=One-Click",
                                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert one_click.status_code == 200, one_click.text
    assert one_click.json()["data"] == {"unsubscribed": True, "changed": True}
    again = await app.client.post("/api/v1/email/unsubscribe", data={"token": _token(bob)})  # token in the body
    assert again.status_code == 200 and again.json()["data"]["changed"] is False
    multipart = await app.client.post("/api/v1/email/unsubscribe", files={"token": (None, _token(bob))})
    assert multipart.status_code == 200, multipart.text
    listed = await calls.ok("get", "/email/suppressions", full=True)
    assert [s["email"] for s in listed["data"]] == ["bob@example.com", "gone@example.com"]
    assert listed["meta"]["total"] == 2 and listed["data"][0]["source"] == "unsubscribe"
    assert len(await _audits(app, site, "email_unsubscribed")) == 1
    assert len(await _audits(app, site, "email_suppressed")) == 1
    audit_rows = await _audits(app, site, "email_unsubscribed")
    assert "bob" not in str(dict(audit_rows[0]))  # the address itself is never in the audit trail

    mailbox.envelopes.clear()
    answer = await calls.ok("post", "/email/send", json={"to": ["bob@example.com", "ann@example.com"],
                                                          "inline": inline, "category": "marketing"})
    assert (answer["sent"], answer["suppressed"]) == (1, 1)
    await calls.ok("delete", "/email/suppressions/BOB@example.com", 204)
    await calls.err("delete", "/email/suppressions/bob@example.com", 404, "RECORD_NOT_FOUND")
    assert len(await _audits(app, site, "email_unsuppressed")) == 1

    # Bad tokens: 400 for the one-click path, an HTML error page for the link.
    good = _token(bob)
    tampered = good[:-2] + ("BA" if good.endswith("AA") else "AA")  # never the token itself
    for bad in ("", "x", tampered, "a.b.c"):
        resp = await app.client.post("/api/v1/email/unsubscribe", params={"token": bad})
        assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED", bad
    page = await app.client.get("/api/v1/email/unsubscribe", params={"token": "nope"})
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]


async def test_header_injection_and_bad_sends_are_refused(smtp, mailbox):
    app, calls, site = smtp
    inline = {"subject": "Hi", "text": "Body"}
    injections = [
        {"to": ["a@example.com\r\nBcc: evil@example.net"]},
        {"to": ["a@example.com\nBcc: evil@example.net"]},
        {"to": ['"Ann\r\nBcc: evil@example.net" <a@example.com>']},
        {"to": ['"Ann\u2028Bcc: evil@example.net" <a@example.com>']},
        {"to": ["a@example.com, evil@example.net"]},
        {"to": ["a@example.com; evil@example.net"]},
        {"to": ["a@example.com"], "cc": ["c@example.com\r\nBcc: evil@example.net"]},
        {"to": ["a@example.com"], "replyTo": "r@example.com\nBcc: evil@example.net"},
        {"to": ["a@example.com"], "replyTo": "r@example.com, evil@example.net"},
        {"to": ["a@example.com"], "inline": {"subject": "Hi\r\nBcc: evil@example.net", "text": "x"}},
        {"to": ["a@example.com"], "inline": {"subject": "Hi\nX-Evil: 1", "text": "x"}},
        {"to": ["a@example.com"], "inline": {"subject": "Hi {{ s }}", "text": "x"},
         "variables": {"s": "\r\nBcc: evil@example.net"}},
    ]
    for body in injections:
        full = {"inline": inline, **body}
        resp = await calls.call("post", "/email/send", json=full)
        assert resp.status_code == 400, (body, resp.text)
        assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    bad = [
        {}, {"to": []}, {"to": "nobody"}, {"to": [1]}, {"to": ["a@example.com"]},
        {"to": ["a@example.com"], "inline": inline, "templateKey": "x"},
        {"to": ["a@example.com"], "inline": {"subject": "s"}}, {"to": ["a@example.com"], "inline": "x"},
        {"to": ["a@example.com"], "inline": {"subject": "s", "text": "t", "bcc": "x"}},
        {"to": ["a@example.com"], "inline": inline, "category": "spam"},
        {"to": ["a@example.com"], "inline": inline, "variables": []},
        {"to": ["a@example.com"], "inline": inline, "bcc": ["x@example.com"]},
        {"to": ["a@example.com"], "inline": inline, "category": "marketing", "cc": ["c@example.com"]},
        {"to": ["a@example.com"] * 1001, "inline": inline},
        {"to": ["a@localhost"], "inline": inline},
        {"to": ["a@example.com"], "templateKey": 5},
    ]
    for body in bad:
        resp = await calls.call("post", "/email/send", json=body)
        assert resp.status_code == 400, (body, resp.text)
    # Template injection: statements, calls, attributes of Python objects are refused, not run.
    for source in ("{{ ''.__class__.__mro__ }}", "{% for x in range(10) %}x{% endfor %}",
                   "{{ cycler.__init__.__globals__.os.popen('id').read() }}", "{{ lipsum() }}",
                   "{{ config }}{{ self }}", "{{ 7 * 7 }}", "{{ name|attr('__class__') }}", "{{"):
        resp = await calls.call("post", "/email/send", json={"to": ["a@example.com"],
                                                             "inline": {"subject": "s", "html": source}})
        assert resp.status_code == 400, (source, resp.text)
    await calls.err("post", "/email/test", 400, "VALIDATION_FAILED", json={"to": ["a@example.com"]})
    await calls.err("post", "/email/test", 400, "VALIDATION_FAILED", json={"to": "a@example.com\r\nBcc: b@x.io"})
    await calls.err("post", "/email/send", 400, "VALIDATION_FAILED", content=b"not json")
    assert mailbox.envelopes == []


async def test_large_lists_are_queued_and_sends_are_rate_limited(make_app, mailbox, run_due_jobs):
    app, calls, site = await smtp_app(make_app, mailbox, SVC_EMAIL_QUEUE_THRESHOLD="2", SVC_RATE_LIMIT_EMAIL="3")
    await calls.ok("post", "/email/suppressions", 201, json={"email": "d@example.com"})
    to = [f"{c}@example.com" for c in "abcde"]
    answer = await calls.ok("post", "/email/send", 202, json={
        "to": to, "inline": {"subject": "Big", "text": "Hi, leave: {{ unsubscribeUrl }}"}, "category": "marketing"})
    assert (answer["queued"], answer["sent"], answer["suppressed"]) == (4, 0, 1) and answer["batchId"]
    assert mailbox.envelopes == []
    await calls.ok("post", "/email/suppressions", 201, json={"email": "e@example.com"})  # after queueing
    await run_due_jobs(app.kernel, periodic=False)
    received = sorted(r for e in mailbox.envelopes for r in e.rcpt_tos)
    assert received == ["a@example.com", "b@example.com", "c@example.com"]
    for message in mailbox.messages():
        assert _token(message) in message.get_content()
    transactional = await calls.ok("post", "/email/send", 202, json={"to": to, "inline": {"subject": "T", "text": "x"}})
    assert transactional["queued"] == 5
    await run_due_jobs(app.kernel, periodic=False)
    assert len(mailbox.envelopes) == 4 and len(mailbox.envelopes[-1].rcpt_tos) == 5
    await calls.ok("post", "/email/test", json={"to": "a@example.com"})  # the third send this minute
    resp = await calls.call("post", "/email/test", json={"to": "a@example.com"})  # the fourth
    assert resp.status_code == 429 and resp.json()["errors"][0]["code"] == "RATE_LIMITED"


async def test_degraded_and_failing_transport(make_app):
    degraded = await make_app()
    admin = {"Authorization": f"Bearer {await degraded.login()}", "X-Svc-Site": "default"}
    caps = (await degraded.client.get("/api/v1/email/capabilities", headers=admin)).json()["data"]
    assert caps["configured"] is False and caps["defaultFrom"] is None
    for path, body in (("/email/send", {"to": ["a@example.com"], "inline": {"subject": "s", "text": "t"}}),
                       ("/email/send", {}), ("/email/test", {"to": "a@example.com"})):
        resp = await degraded.client.post(f"/api/v1{path}", json=body, headers=admin)
        assert resp.status_code == 503 and resp.json()["errors"][0]["code"] == "EMAIL_NOT_CONFIGURED"
    await degraded.client.post("/api/v1/email/templates", headers=admin,
                               json={"key": "k", "name": "K", "subject": "S {{a}}", "text": "T {{a}}"})
    preview = await degraded.client.post("/api/v1/email/templates/k/preview", headers=admin,
                                         json={"variables": {"a": 1}})
    assert preview.json()["data"] == {"subject": "S 1", "html": None, "text": "T 1"}

    refused = await make_app(smtp_host="127.0.0.1", smtp_port=free_port())  # nothing listens there
    admin = {"Authorization": f"Bearer {await refused.login()}", "X-Svc-Site": "default"}
    for path, body in (("/email/send", {"to": ["a@example.com"], "inline": {"subject": "s", "text": "t"}}),
                       ("/email/test", {"to": "a@example.com"})):
        resp = await refused.client.post(f"/api/v1{path}", json=body, headers=admin)
        assert resp.status_code == 502 and resp.json()["errors"][0]["code"] == "DELIVERY_FAILED"


class _Busy:
    """An SMTP peer that answers 451 (try later) to the first ``busy`` messages, then accepts."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.accepted: list = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        if self.busy > 0:
            self.busy -= 1
            return "451 Try again later"
        self.accepted.append(envelope)
        return "250 OK"


@contextlib.asynccontextmanager
async def _busy_send(make_app, busy: int, subject: str):
    """An app whose SMTP peer answers 451 to the first ``busy`` messages, and one queued send to
    a@example.com: ``(app, admin headers, the send's answer, the peer)``."""
    from aiosmtpd.controller import Controller

    peer, port = _Busy(busy=busy), free_port()
    controller = Controller(peer, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        app = await make_app(smtp_host="127.0.0.1", smtp_port=port, env={"SVC_EMAIL_QUEUE_THRESHOLD": "0"})
        admin = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
        resp = await app.client.post("/api/v1/email/send", headers=admin, json={
            "to": ["a@example.com"], "inline": {"subject": subject, "text": "x"}})
        assert resp.status_code == 202 and resp.json()["data"]["queued"] == 1
        yield app, admin, resp.json()["data"], peer
    finally:
        controller.stop()


async def test_a_queued_send_is_retried_after_a_temporary_refusal(make_app, run_due_jobs):
    import datetime as dt

    async with _busy_send(make_app, 1, "Retry") as (app, _admin, _sent, peer):
        [first] = await run_due_jobs(app.kernel, periodic=False)
        assert not first.ok and first.retry_at is not None and peer.accepted == []
        later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)
        [second] = await run_due_jobs(app.kernel, later, periodic=False)
        assert second.ok and [e.rcpt_tos for e in peer.accepted] == [["a@example.com"]]


async def test_a_recipient_whose_retries_ran_out_is_counted_failed(make_app, run_due_jobs):
    # -- more43: every attempt refused for a while (451): after the job's last attempt the
    # recipient counts as failed, not pending, and the batch is done.
    import datetime as dt

    async with _busy_send(make_app, 1000, "Never") as (app, admin, sent, peer):
        batch = sent["batchId"]
        attempts = app.kernel.jobs.job("email.deliver").retries + 1
        runs = []
        for hour in range(attempts):
            runs += await run_due_jobs(app.kernel, dt.datetime.now(dt.UTC) + dt.timedelta(hours=2 * hour), periodic=False)
            shown = (await app.client.get(f"/api/v1/email/batches/{batch}", headers=admin)).json()["data"]
            if hour < attempts - 1:
                assert (shown["pending"], shown["failed"], shown["status"]) == (1, 0, "sending"), shown
        assert len(runs) == attempts and not any(r.ok for r in runs) and runs[-1].retry_at is None
        assert (shown["pending"], shown["failed"], shown["sent"], shown["status"]) == (0, 1, 0, "done"), shown
        assert peer.accepted == []
