"""The flows ``mail`` operation sends through the email plugin's send path: its templates, the
suppression list, marketing consent and the RFC 8058 unsubscribe headers; without the email
plugin it falls back to the kernel's mailer with plain text (and refuses templates)."""

from __future__ import annotations

from kernel.testing import Calls, disabled_with_dependents, new_member
from plugin_tests.flows.conftest import FLOWS_ENV

GRANT = {"granted": True, "source": "banner", "version": "1"}


async def _app(make_app, mailbox, **env):
    app = await make_app(
        env={
            **FLOWS_ENV,
            "SVC_EMAIL_FROM": "News <news@example.com>",
            "SVC_EMAIL_BASE_URL": "https://api.example.com",
            **env,
        },
        smtp_host="127.0.0.1",
        smtp_port=mailbox.port,
    )
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    return app, site, Calls(app.client, {**admin, "X-Svc-Site": site})


async def _run(app, calls, options, trigger=None):
    graph = {"nodes": [{"id": "send", "operation": "mail", "options": options}], "edges": []}
    flow = await calls.ok(
        "post", "/flows", 201, json={"name": "m", "status": "active", "trigger": "manual", "graph": graph}
    )
    started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json=trigger or {})
    await app.kernel.jobs.run_due()
    return await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")


async def test_mail_uses_templates_suppressions_consent_and_unsubscribe_headers(make_app, mailbox):
    app, site, calls = await _app(make_app, mailbox)
    await calls.ok(
        "post",
        "/email/templates",
        201,
        json={
            "key": "digest",
            "name": "Digest",
            "subject": "Digest for {{ name }}",
            "text": "Hello {{ name }}. Leave: {{ unsubscribeUrl }}",
        },
    )
    await calls.ok("post", "/email/suppressions", 201, json={"email": "gone@example.com"})
    silent, willing = await new_member(app, site), await new_member(app, site)
    await Calls(app.client, willing.headers).ok("put", "/me/consents/marketing", json=GRANT)
    run = await _run(
        app,
        calls,
        {
            "to": ["out@example.org", "GONE@example.com", silent.email, "{{ $trigger.who }}"],
            "templateKey": "digest",
            "variables": {"name": "{{ $trigger.name }}"},
            "category": "marketing",
        },
        {"who": willing.email, "name": "friend"},
    )
    assert run["status"] == "succeeded", run
    output = run["steps"][0]["output"]
    assert (output["sent"], output["suppressed"], output["withoutConsent"], output["recipients"]) == (
        2,
        1,
        1,
        4,
    )
    messages = await mailbox.wait_for(2)
    assert sorted(m["To"].lower() for m in messages) == sorted(["out@example.org", willing.email.lower()])
    for message in messages:
        assert message["Subject"] == "Digest for friend"
        assert message["List-Unsubscribe"].startswith(
            "<https://api.example.com/api/v1/email/unsubscribe?token="
        )
        assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert message["List-Unsubscribe"][1:-1] in message.get_content()
    # A transactional step: one message, no unsubscribe headers.
    mailbox.envelopes.clear()
    plain = await _run(
        app, calls, {"to": "ops@example.com", "subject": "Run {{ $trigger.n }}", "body": "ok"}, {"n": 7}
    )
    assert plain["status"] == "succeeded" and plain["steps"][0]["output"]["messageId"]
    [message] = await mailbox.wait_for(1, to="ops@example.com")
    assert message["Subject"] == "Run 7" and message["List-Unsubscribe"] is None
    # An unknown template fails the step with the email plugin's code.
    missing = await _run(app, calls, {"to": "ops@example.com", "templateKey": "nope"})
    assert missing["status"] == "failed" and missing["steps"][0]["error"]["code"] == "NOT_FOUND"


async def test_bad_mail_options(make_app, mailbox):
    _app_, _site, calls = await _app(make_app, mailbox)
    for options, path in (
        ({"to": "a@example.com", "templateKey": "k", "subject": "s"}, ["templateKey"]),
        ({"to": "a@example.com", "subject": "s", "body": "b", "category": "spam"}, ["category"]),
        ({"to": "a@example.com", "subject": "s", "body": "b", "variables": [1]}, ["variables"]),
    ):
        graph = {"nodes": [{"id": "m", "operation": "mail", "options": options}], "edges": []}
        resp = await calls.call(
            "post", "/flows", json={"name": "x", "status": "active", "trigger": "manual", "graph": graph}
        )
        assert resp.status_code == 400, resp.text
        assert resp.json()["errors"][0]["path"][-len(path) :] == path


async def test_without_the_email_plugin_mail_is_plain_text(make_app, mailbox):
    app, _site, calls = await _app(make_app, mailbox, SVC_PLUGINS_DISABLED=disabled_with_dependents("email"))
    run = await _run(app, calls, {"to": "ops@example.com", "subject": "Plain", "body": "text"})
    assert run["status"] == "succeeded", run
    [message] = await mailbox.wait_for(1, to="ops@example.com")
    assert message["Subject"] == "Plain" and message["List-Unsubscribe"] is None
    templated = await _run(app, calls, {"to": "ops@example.com", "templateKey": "digest"})
    assert templated["status"] == "failed"
    assert templated["steps"][0]["error"]["code"] == "EMAIL_NOT_CONFIGURED"
