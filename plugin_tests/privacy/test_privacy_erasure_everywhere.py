"""Issue 40, point 2: nothing personal outlives an erasure. One marker goes, through the public
API as a client writes it, into every record a plugin keeps outside items (the subject's own
account, its consent and sessions, flow runs and an outbound webhook's answer, a queued email and
its batch, an AI conversation and approval through a model server, an agent's goal, staging and
write log, translation memory, the audit trail, item revisions and versions, the search index);
after the erasure the database holds it nowhere: the SQLite file, its ``-wal`` and ``-shm`` read
as raw bytes, and on PostgreSQL every table's contents read with SQL. Another site holding the
same address keeps all of its own."""

from __future__ import annotations

import asyncio
import json

import pytest_asyncio
from sqlalchemy import select, text

from kernel.db.meta import now_utc
from kernel.testing import Calls, disabled_with_dependents, new_member
from plugin_tests.ai.conftest import ScriptedModel, tool_call
from plugin_tests.cdc.conftest import CDC_ENV
from plugin_tests.cdc.test_webhooks import SECRET, recorded
from plugin_tests.pageviews.pageview_beacons import beacon
from plugin_tests.privacy.test_privacy_erasure import tables_holding
from plugin_tests.privacy.test_privacy_erasure_files import files_holding
from plugins.access.tables import memberships
from plugins.pageviews import plugin as pageviews_plugin
from plugins.realtime import api as realtime_api
from plugins.realtime.tables import notifications

MARK = "Qwendolyx"
EMAIL = f"ann.{MARK.lower()}@example.org"
NAME = f"Ann {MARK}"
SLUG = f"ann-{MARK.lower()}"
SEARCHED = "qwendolyx"


def needles() -> list[bytes]:
    texts = [MARK.lower(), MARK.lower()[-6:]]
    return sorted({t.encode(enc) for t in texts for enc in ("utf-8", "utf-16-le", "utf-16-be")})


@pytest_asyncio.fixture
async def model(http_receiver):
    return ScriptedModel(http_receiver)


@pytest_asyncio.fixture
async def app(make_app, mailbox, model):
    return await make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port, env={
        "SVC_EMAIL_FROM": "News <news@example.com>", "SVC_EMAIL_QUEUE_THRESHOLD": "0",
        "SVC_AI_BASE_URL": model.base_url, "SVC_AI_API_KEY": "sk-test-key", "SVC_AI_MODEL": "scripted-1",
        **CDC_ENV})


async def _site(app) -> Calls:
    admin = {"Authorization": f"Bearer {await app.login()}"}
    return Calls(app.client, {**admin, "X-Svc-Site": await app.create_site(admin)})


async def _write_everywhere(app, calls: Calls, model: ScriptedModel, http_receiver, mailbox, run_due_jobs) -> dict:
    """The subject's values through every path a client has; returns what the checks need."""
    site = calls.headers["X-Svc-Site"]
    await calls.collection("patients", {"name": "string", "email": "string", "note": "text", "slug": "string"},
                           versioning=True, meta={"personalData": True})
    # A change-feed webhook to a real local endpoint: its deliveries are logged.
    http_receiver.respond("/feed", lambda r: (200, b"{}", {}))
    sub = await calls.ok("post", "/cdc/subscriptions", status=201, json={
        "name": "feed", "kind": "webhook", "url": http_receiver.url("/feed"), "secret": SECRET})
    await calls.create("patients", {"name": "Somebody Else", "email": "else@example.org", "note": "kept"})
    subject = await calls.create("patients", {"name": NAME, "email": EMAIL, "note": "first visit", "slug": SLUG})
    # A page named after the subject, visited (the daily counts and the visitor rows keep its path).
    assert (await beacon(app.client, site, f"/patients/{SLUG}")).status_code == 204
    await pageviews_plugin.counter_of(app.kernel).rollup.flush_site(site)
    await calls.ok("patch", f"/items/patients/{subject['id']}", json={"note": f"{NAME} came back"})
    await calls.ok("post", f"/items/patients/{subject['id']}/versions", 201, json={"key": "draft", "name": "Draft"})
    if app.kernel.db.dialect == "postgresql":  # a kept grouped count per address
        await _grouped_by_email(app, calls)

    # The subject's own account, a member of the site, with a session and a consent decision.
    member = await new_member(app, site, "subscriber", email=EMAIL)
    me = Calls(app.client, member.headers)
    await me.ok("put", "/me/consents/analytics", json={"granted": True, "source": "banner", "version": "1"})
    [act] = await calls.ok("get", "/audit", params={"action": "consent_granted"})
    assert act["ip"]  # the address the subject acted from

    # Flow runs: a manual run's input, the answer of the webhook it calls (a real local server
    # echoing) and the notification it sends; and a run started by an incoming webhook.
    http_receiver.respond("/hook", lambda r: (200, json.dumps({"echo": r.json()}).encode(), {}))
    graph = {"nodes": [{"id": "call", "operation": "request",
                        "options": {"url": http_receiver.url("/hook"), "method": "POST", "body": "{{ $trigger }}"}},
                       {"id": "tell", "operation": "notify", "options": {"title": "Visit of {{ $trigger.name }}"}}],
             "edges": [{"from": "call", "to": "tell"}]}
    flow = await calls.ok("post", "/flows", 201, json={"name": "notify", "status": "active", "trigger": "manual",
                                                       "graph": graph})
    started = await calls.ok("post", f"/flows/{flow['id']}/run", 202, json={"email": EMAIL, "name": NAME})
    await run_due_jobs(app.kernel, periodic=False)
    run = await calls.ok("get", f"/flows/{flow['id']}/runs/{started['runId']}")
    assert run["status"] == "succeeded" and run["steps"][0]["output"]["data"]["echo"]["email"] == EMAIL
    assert [n["title"] for n in await calls.ok("get", "/notifications")] == [f"Visit of {NAME}"]
    hook = await calls.ok("post", "/flows", 201, json={"name": "in", "status": "active", "trigger": "webhook",
                                                       "graph": {"nodes": [{"id": "l", "operation": "log", "options": {
                                                           "message": "{{ $trigger.body.email }}"}}], "edges": []}})
    resp = await app.client.post(f"/api/v1/flows/{hook['id']}/trigger", json={"email": EMAIL},
                                 headers={"X-Svc-Site": site, "x-flow-token": hook["token"]})
    assert resp.status_code == 200, resp.text

    # Email: a queued send (its batch keeps the message), delivered to the local SMTP server.
    sent = await calls.ok("post", "/email/send", 202, json={"to": [f"{NAME} <{EMAIL}>"],
                                                             "inline": {"subject": "Your visit",
                                                                        "text": f"Dear {NAME}, see you soon"}})
    assert sent["queued"] == 1
    await run_due_jobs(app.kernel, periodic=False)
    [message] = await mailbox.wait_for(1, to=EMAIL)
    assert NAME in message.get_content()

    # AI: a conversation through the model server (the model reads the item, quotes it, and asks
    # to create another record: an approval holding the address).
    model.script = [{"tool_calls": [tool_call("read_item", {"collection": "patients", "id": subject["id"]})]},
                    {"content": f"{NAME} is a patient; write to {EMAIL}.",
                     "tool_calls": [tool_call("create_item", {"collection": "patients",
                                                              "data": {"name": NAME, "email": EMAIL}}, "call_2")]}]
    resp = await calls.call("post", "/ai/chat", json={"message": f"what do we know about {NAME}?"})
    assert resp.status_code == 202, resp.text
    assert (await calls.ok("get", "/ai/approvals"))[0]["status"] == "pending"

    # Agents: a goal whose staged write (and its log) hold the subject's name.
    await calls.ok("post", "/agent/roles", status=201, json={
        "name": "writer", "description": "Keeps records tidy", "collections": ["patients"], "autonomy": "stage"})
    model.script = [{"tool_calls": [tool_call("update_item", {"collection": "patients", "id": subject["id"],
                                                              "data": {"note": f"{NAME} to be called"}})]}]
    done = await calls.ok("post", "/agent/goals", status=201, json={
        "title": "tidy", "description": f"Ask {NAME} to call back", "execution": "sync", "role": "writer"})
    assert done["steps"][0]["outcome"] == "staged"

    # An editorial review whose rejection names the subject (the article itself does not).
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True, requireSeparateReviewer=False)
    article = await calls.create("articles", {"title": "Clinic news"})
    me_id = (await calls.ok("get", "/auth/me"))["id"]
    await calls.ok("post", f"/editorial/articles/{article['id']}/submit-review", json={"reviewerId": me_id})
    await calls.ok("post", f"/editorial/articles/{article['id']}/reject", json={"reason": f"Do not name {NAME}"})

    # Translation memory, the glossary, and a view preset searching for the subject.
    await calls.ok("post", "/tm", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                     "sourceText": f"Letter to {NAME}",
                                                     "targetText": f"Brief an {NAME}"})
    await calls.ok("post", "/tm/glossary", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                              "term": NAME, "translation": NAME})
    await calls.ok("post", "/presets", status=201, json={"collection": "patients", "layout": "tabular",
                                                          "search": EMAIL, "bookmark": "one patient"})
    found = await calls.ok("get", "/search", full=True, params={"q": SEARCHED})
    assert subject["id"] in [r["id"] for r in found["data"]]
    await recorded(calls, sub, lambda log: len(log) >= 1)  # the feed delivered (ids and field names)
    return {"subject": subject, "member": member, "flow": flow, "run": started["runId"]}


async def _grouped_by_email(app, calls: Calls) -> None:
    """Register the (patients, email) pair of the kept grouped counts and wait until it is ready."""
    from plugins.items.read import group_counts
    from plugins.schema.api import get_schema

    site = calls.headers["X-Svc-Site"]
    params = {"aggregate[count]": "*", "groupBy": "email"}
    await calls.ok("get", "/items/patients", params=params)
    registry = group_counts.registry(app.kernel)
    pair = (site, (await get_schema(app.kernel, site)).collection("patients").id, "email")
    await asyncio.gather(*registry.tasks.values())
    assert await registry.is_ready(pair) is True


async def _erase(calls: Calls) -> dict:
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "patients", "filter": {"email": {"_eq": EMAIL}}, "reason": "Art. 17"})
    assert req["matched"] == 1
    return await calls.ok("post", f"/admin/erasure/{req['id']}/execute")


async def test_after_an_erasure_no_record_of_any_plugin_holds_the_subject(app, model, http_receiver, mailbox,
                                                                          run_due_jobs):
    calls = await _site(app)
    wrote = await _write_everywhere(app, calls, model, http_receiver, mailbox, run_due_jobs)
    kernel = app.kernel
    before = set(await tables_holding(kernel, MARK))
    assert {"svc_users", "svc_items", "svc_item_revisions", "svc_item_versions", "svc_flow_runs",
            "svc_email_batches", "svc_ai_conversations", "svc_ai_messages", "svc_ai_approvals",
            "svc_agent_goals", "svc_agent_stagings", "svc_agent_actions", "svc_tm_entries",
            "svc_notifications", "svc_search", "svc_pageview_daily", "svc_pageview_visitors", "svc_glossary",
            "svc_presets", "svc_editorial_reviews"} <= before, before
    if kernel.db.dialect == "postgresql":
        assert "svc_item_group_counts" in before
    if kernel.db.is_sqlite:
        assert files_holding(kernel.settings.data_path, needles())  # the raw scan sees it
    # A notification meant for the subject goes too, though its text does not quote them.
    await realtime_api.notify(kernel, calls.headers["X-Svc-Site"], kind="personal", title="For you",
                              recipient=wrote["member"].id)

    done = await _erase(calls)
    assert done["status"] == "executed" and done["recordCount"] == 1
    assert MARK.lower() not in json.dumps(done).lower()
    reached = done["reached"]
    for target in ("accounts", "consents", "flowRuns", "emailBatches", "aiConversations", "aiApprovals",
                   "agentGoals", "agentStagings", "agentActions", "translationMemory", "notifications",
                   "pageviews", "pageviewVisitors", "glossary", "presets", "editorialReviews"):
        assert reached.get(target, 0) >= 1, (target, reached)

    assert await tables_holding(kernel, MARK) == []
    assert await tables_holding(kernel, MARK.lower()[-6:]) == []  # a tail, as FTS5 may store it
    if kernel.db.is_sqlite:
        assert files_holding(kernel.settings.data_path, needles()) == {}
    # The account is gone: no login, no identity; the site and its other records go on.
    resp = await app.client.post("/api/v1/auth/login", json={"email": EMAIL, "password": wrote["member"].password})
    assert resp.status_code == 401
    assert [i["name"] for i in (await calls.ok("get", "/items/patients"))] == ["Somebody Else"]
    await calls.err("get", f"/flows/{wrote['flow']['id']}/runs/{wrote['run']}", 404)
    assert await calls.ok("get", "/ai/approvals") == []
    async with kernel.db.connect() as conn:  # the subject's own notification is gone (the admin never saw it)
        left = (await conn.execute(select(notifications.c.id).where(
            notifications.c.recipient_id == wrote["member"].id))).all()
    assert left == []
    # Those left name no one (the approval's request says a skill waits, not whose value it holds;
    # the review request, which collection and item wait for the admin's review).
    kinds = sorted(n["kind"] for n in await calls.ok("get", "/notifications"))
    assert kinds == ["agent.staged", "ai.approval.requested", "editorial.review_requested"]
    # The trail keeps the subject's own acts, by id, without the address they came from.
    acts = await calls.ok("get", "/audit", params={"action": "consent_granted"})
    assert [(a["actor"]["id"], a["ip"]) for a in acts] == [(wrote["member"].id, None)]
    [entry] = await calls.ok("get", "/audit", params={"action": "data_erased"})
    assert entry["details"]["recordCount"] == 1 and entry["details"]["reached"] == sorted(reached)


async def test_erasing_in_one_site_leaves_another_sites_identical_address(app, model, http_receiver, mailbox,
                                                                          run_due_jobs):
    calls = await _site(app)
    other = await _site(app)
    site_b = other.headers["X-Svc-Site"]
    # Site B knows the same person: an item, a flow run, a batch, translation memory, and the
    # same account (users are instance-wide identities; B's membership keeps it).
    await other.collection("patients", {"name": "string", "email": "string"}, meta={"personalData": True})
    kept = await other.create("patients", {"name": NAME, "email": EMAIL})
    wrote = await _write_everywhere(app, calls, model, http_receiver, mailbox, run_due_jobs)
    await new_member(app, None, None, email="x-" + EMAIL, login=False)  # an unrelated identity
    async with app.kernel.db.begin() as conn:
        role = (await other.ok("get", "/roles"))[0]["id"]
        await conn.execute(memberships.insert().values(site_id=site_b, user_id=wrote["member"].id, role_id=role,
                                                       created_at=now_utc()))
    app.kernel.access.invalidate(site_b)
    b_flow = await other.ok("post", "/flows", 201, json={"name": "b", "status": "active", "trigger": "manual",
                                                         "graph": {"nodes": [{"id": "l", "operation": "log",
                                                                              "options": {"message": "{{ $trigger.email }}"}}],
                                                                   "edges": []}})
    b_run = await other.ok("post", f"/flows/{b_flow['id']}/run", 202, json={"email": EMAIL})
    await run_due_jobs(app.kernel, periodic=False)
    b_tm = await other.ok("post", "/tm", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                            "sourceText": f"Letter to {NAME}",
                                                            "targetText": f"Brief an {NAME}"})

    done = await _erase(calls)
    assert done["reached"]["accounts"] == 1
    # A holds nothing; B holds all of its own.
    assert [i["name"] for i in await calls.ok("get", "/items/patients")] == ["Somebody Else"]
    assert (await other.get("patients", kept["id"]))["email"] == EMAIL
    assert (await other.ok("get", f"/flows/{b_flow['id']}/runs/{b_run['runId']}"))["input"] == {"email": EMAIL}
    assert [e["id"] for e in await other.ok("get", "/tm")] == [b_tm["id"]]
    # The identity stays for B (B's member still logs in there), without its membership of A.
    token = await app.login(EMAIL, wrote["member"].password, site=site_b)
    assert token
    resp = await app.client.post("/api/v1/auth/login", json={"email": EMAIL, "password": wrote["member"].password},
                                 headers={"X-Svc-Site": calls.headers["X-Svc-Site"]})
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "INVALID_CREDENTIALS", resp.text
    async with app.kernel.db.connect() as conn:
        rows = (await conn.execute(text("SELECT site_id FROM svc_memberships WHERE user_id = :u"),
                                   {"u": wrote["member"].id})).scalars().all()
        await conn.rollback()
    assert rows == [site_b]


async def test_terms_are_the_values_the_subject_holds_alone(app):
    calls = await _site(app)
    await calls.collection("patients", {"name": "string", "city": "string", "tag": "string", "note": "text",
                                        "phone": "string"})
    await calls.create("patients", {"name": NAME, "city": "Springfield", "tag": "patients", "phone": "555-0199"})
    # Another patient shares the city, and quotes the subject's name in a longer text: the city is
    # nobody's alone; the name still is the subject's (quoting is not holding).
    await calls.create("patients", {"name": "Bob Other", "city": "Springfield", "note": f"knows {NAME}"})
    tm = {"sourceLang": "en", "targetLang": "de"}
    for source in (f"Letter to {NAME}", "Call 555-0199 now", "Springfield weather", "patients list"):
        await calls.ok("post", "/tm", status=201, json={**tm, "sourceText": source, "targetText": source})
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "patients", "filter": {"name": {"_eq": NAME}}, "reason": "r"})
    done = await calls.ok("post", f"/admin/erasure/{req['id']}/execute")
    assert done["reached"]["translationMemory"] == 2
    # A value shared whole, or the name of a collection or field, reaches nothing.
    assert sorted(e["sourceText"] for e in await calls.ok("get", "/tm")) == ["Springfield weather", "patients list"]
    assert [i["name"] for i in await calls.ok("get", "/items/patients")] == ["Bob Other"]


async def test_an_erasure_runs_without_the_optional_plugins(make_app):
    """Targets come from the enabled plugins only: privacy names no plugin that keeps one."""
    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("flows", "ai")})
    calls = await _site(app)
    await calls.collection("patients", {"name": "string", "email": "string"})
    await calls.create("patients", {"name": NAME, "email": EMAIL})
    await calls.ok("post", "/tm", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                     "sourceText": f"Letter to {NAME}", "targetText": "Brief"})
    await calls.err("get", "/flows", 404)
    done = await _erase(calls)
    assert done["status"] == "executed" and done["reached"] == {"translationMemory": 1}
