"""Issue 40, point 2, the last three records outside items: a git CI run's log quoting the subject
(fetched from a local GitHub REST server), the subject's MCP session (opened through the real
MCP endpoint on uvicorn) and the subject's web push subscription. After an erasure in site A, A's
records are gone: no table holds their markers, nor the raw bytes of the SQLite file, its
``-wal`` and ``-shm``. Site B, where the same person has the same records, keeps all of its own
(erasure is per site)."""

from __future__ import annotations

from sqlalchemy import select

from kernel.testing import Calls, new_member
from plugin_tests.git.git_helpers import (
    SHA,
    TOKEN,
    connect,
    env_for,
    github_pull,
    guarded,
    serve_github_pulls,
)
from plugin_tests.privacy.test_privacy_erasure import tables_holding
from plugin_tests.privacy.test_privacy_erasure_files import files_holding
from plugin_tests.realtime.test_push import Browser
from plugins.ai.tables import mcp_sessions
from plugins.git.tables import ci_runs
from plugins.realtime.tables import push_subscriptions

NAME = "Ann Vorquendal"
EMAIL = "ann.vorquendal@example.org"
# Markers only A's records hold (B's hold others): none may be left anywhere after A's erasure.
A_LOG_MARK, B_LOG_MARK = "ci-run-zlatobrix", "ci-run-keptbluvo"
A_PUSH_MARK, B_PUSH_MARK = "push-a-frimbolux", "push-b-keptwaro"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _ci_log(calls: Calls, http_receiver, run_id: int, text: str) -> None:
    """An integration of the site whose CI run ``run_id`` has the log ``text``, fetched and kept."""
    made = await connect(calls)
    await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh")
    http_receiver.respond(f"/repos/acme/site/actions/jobs/{run_id}/logs",
                          lambda r: (200, text.encode(), {"Content-Type": "text/plain"}))
    runs = await calls.ok("get", f"/integrations/git/{made['id']}/pull-requests/5/ci")
    assert str(run_id) in [r["runId"] for r in runs]
    log = await calls.ok("get", f"/integrations/git/{made['id']}/ci-runs/{run_id}/logs")
    assert log["log"] == text


async def _subject_records(server, http_receiver, calls: Calls, headers: dict, log_mark: str, push_mark: str,
                           run_id: int) -> str:
    """The subject's MCP session, push subscription and a CI log quoting them, in one site;
    returns the session id."""
    await _ci_log(calls, http_receiver, run_id, f"FAIL test_signup: {NAME} <{EMAIL}> rejected ({log_mark})")
    opened = await server.client.post("/api/v1/mcp", json=INIT, headers={**headers, **ACCEPT})
    assert opened.status_code == 200, opened.text
    me = Calls(calls.client, headers)
    await me.ok("post", "/push/subscriptions", status=201,
                json={"endpoint": f"https://push.example.net/send/{push_mark}", "keys": Browser().keys})
    return opened.headers["mcp-session-id"]


async def test_erasure_reaches_ci_logs_mcp_sessions_and_push_subscriptions(make_app, live_server, http_receiver):
    app = await make_app(env=env_for(http_receiver))
    server = await live_server(app)
    kernel = app.kernel
    admin = {"Authorization": f"Bearer {await app.login()}"}
    sites = [await app.create_site(admin) for _ in range(2)]
    calls, calls_b = (Calls(app.client, {**admin, "X-Svc-Site": s}) for s in sites)
    serve_github_pulls(http_receiver, [github_pull(5)])
    http_receiver.respond(f"/repos/acme/site/commits/{SHA}/check-runs?per_page=100", guarded(TOKEN, {
        "total_count": 2, "check_runs": [
            {"id": run, "name": "build", "status": "completed", "conclusion": "failure", "head_sha": SHA}
            for run in (101, 202)]}))
    for c in (calls, calls_b):
        await c.collection("patients", {"name": "string", "email": "string"}, meta={"personalData": True})
        await c.create("patients", {"name": NAME, "email": EMAIL})
    subject = await new_member(app, sites, "subscriber", email=EMAIL)
    headers_a = {"Authorization": f"Bearer {subject.token}", "X-Svc-Site": sites[0]}
    headers_b = {"Authorization": f"Bearer {await app.login(EMAIL, subject.password, site=sites[1])}",
                 "X-Svc-Site": sites[1]}
    session_a = await _subject_records(server, http_receiver, calls, headers_a, A_LOG_MARK, A_PUSH_MARK, 101)
    session_b = await _subject_records(server, http_receiver, calls_b, headers_b, B_LOG_MARK, B_PUSH_MARK, 202)
    a_marks = [A_LOG_MARK, A_PUSH_MARK, session_a]
    assert await tables_holding(kernel, session_a) == ["svc_ai_mcp_sessions"]
    if kernel.db.is_sqlite:
        seen = files_holding(kernel.settings.data_path, [m.encode() for m in a_marks]).values()
        assert {hit for hits in seen for hit in hits} == {m.encode() for m in a_marks}  # the raw scan sees them

    req = await calls.ok("post", "/admin/erasure", 201, json={
        "collection": "patients", "filter": {"email": {"_eq": EMAIL}}, "reason": "Art. 17"})
    done = await calls.ok("post", f"/admin/erasure/{req['id']}/execute")
    assert done["status"] == "executed"
    assert (done["reached"]["gitCiRuns"], done["reached"]["aiMcpSessions"], done["reached"]["pushSubscriptions"]) \
        == (1, 1, 1)

    # A: nothing left, in any table or in the database files' bytes.
    for mark in a_marks:
        assert await tables_holding(kernel, mark) == [], mark
    if kernel.db.is_sqlite:
        assert files_holding(kernel.settings.data_path, [m.encode() for m in a_marks]) == {}

    # B keeps its own: the log quoting the subject, the session (still usable), the subscription.
    async with kernel.db.connect() as conn:
        logs = (await conn.execute(select(ci_runs.c.site_id, ci_runs.c.log).where(ci_runs.c.log.is_not(None)))).all()
        sessions = (await conn.execute(select(mcp_sessions.c.site_id, mcp_sessions.c.id))).all()
        subs = (await conn.execute(select(push_subscriptions.c.site_id, push_subscriptions.c.endpoint))).all()
        await conn.rollback()
    assert [(s, B_LOG_MARK in log and EMAIL in log) for s, log in logs] == [(sites[1], True)]
    assert [tuple(r) for r in sessions] == [(sites[1], session_b)]
    assert [tuple(r) for r in subs] == [(sites[1], f"https://push.example.net/send/{B_PUSH_MARK}")]
    listing = await server.client.post("/api/v1/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                                       headers={**headers_b, **ACCEPT, "Mcp-Session-Id": session_b,
                                                "MCP-Protocol-Version": "2025-06-18"})
    assert listing.status_code == 200 and listing.json()["result"]["tools"]
