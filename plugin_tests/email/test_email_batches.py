"""-- govern43: a marketing send scheduled with ``sendAt`` is a batch whose jobs wait for their time;
``GET /email/batches`` shows its progress and outcome (sent, skipped, failed, pending) as the jobs
run, never its recipients; another site and a member see none of it."""

from __future__ import annotations

import datetime as dt

from kernel.db.meta import now_utc
from kernel.testing import Calls, new_member
from plugin_tests.email.conftest import smtp_app


async def test_a_scheduled_marketing_send_and_its_progress(make_app, mailbox, run_due_jobs):
    app, calls, site = await smtp_app(make_app, mailbox)
    at = now_utc() + dt.timedelta(hours=2)
    to = [f"{c}@example.com" for c in "abc"]
    answer = await calls.ok("post", "/email/send", 202, json={
        "to": to, "inline": {"subject": "Spring news", "text": "Hi, leave: {{ unsubscribeUrl }}"},
        "category": "marketing", "sendAt": at.isoformat()})
    assert answer["queued"] == 3 and answer["batchId"]
    batch = await calls.ok("get", f"/email/batches/{answer['batchId']}")
    assert {k: batch[k] for k in ("category", "subject", "total", "sent", "failed", "skipped", "pending", "status")} == {
        "category": "marketing", "subject": "Spring news", "total": 3, "sent": 0, "failed": 0, "skipped": 0,
        "pending": 3, "status": "scheduled"}
    assert batch["sendAt"].startswith(at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M"))
    assert "to" not in batch and "message" not in batch

    # Nothing leaves before its time; one recipient unsubscribes meanwhile.
    await run_due_jobs(app.kernel, periodic=False)
    assert mailbox.envelopes == []
    await calls.ok("post", "/email/suppressions", 201, json={"email": "c@example.com"})
    await run_due_jobs(app.kernel, at + dt.timedelta(seconds=1), periodic=False)
    assert sorted(r for e in mailbox.envelopes for r in e.rcpt_tos) == ["a@example.com", "b@example.com"]
    [listed] = await calls.ok("get", "/email/batches")
    assert (listed["id"], listed["sent"], listed["skipped"], listed["pending"], listed["status"]) == (
        answer["batchId"], 2, 1, 0, "done")

    # Bodies: a time in the past or without a zone is refused, naming sendAt.
    for bad in ("2001-01-01T00:00:00Z", "2099-01-01T00:00:00", "soon", 5):
        await calls.err("post", "/email/send", 400, "VALIDATION_FAILED", ["sendAt"], json={
            "to": to, "inline": {"subject": "x", "text": "x"}, "category": "marketing", "sendAt": bad})
    await calls.err("get", "/email/batches/nope", 404, "NOT_FOUND")

    # Another site's admin and a member of this one see none of it.
    admin = {"Authorization": calls.headers["Authorization"]}
    other = Calls(app.client, {**admin, "X-Svc-Site": await app.create_site(admin)})
    assert await other.ok("get", "/email/batches") == []
    await other.err("get", f"/email/batches/{answer['batchId']}", 404, "NOT_FOUND")
    member = Calls(app.client, (await new_member(app, site)).headers)
    await member.err("get", "/email/batches", 403, "PERMISSION_DENIED")


async def test_a_scheduled_send_is_cancelled_before_it_starts(make_app, mailbox, run_due_jobs):
    # -- more43: cancelled before its time, nothing leaves and nothing is counted; once a send
    # started (or was never scheduled) 409 BATCH_STARTED; another site's is 404, a member's 403.
    app, calls, site = await smtp_app(make_app, mailbox)
    at = now_utc() + dt.timedelta(hours=2)
    body = {"to": ["a@example.com", "b@example.com"], "inline": {"subject": "Cancelled news", "text": "x"},
            "category": "marketing", "sendAt": at.isoformat()}
    kept = (await calls.ok("post", "/email/send", 202, json={**body, "inline": {"subject": "Kept", "text": "x"}}))["batchId"]
    dropped = (await calls.ok("post", "/email/send", 202, json=body))["batchId"]
    admin = {"Authorization": calls.headers["Authorization"]}
    other = Calls(app.client, {**admin, "X-Svc-Site": await app.create_site(admin)})
    await other.err("post", f"/email/batches/{dropped}/cancel", 404, "NOT_FOUND")
    member = Calls(app.client, (await new_member(app, site)).headers)
    await member.err("post", f"/email/batches/{dropped}/cancel", 403, "PERMISSION_DENIED")
    await calls.err("post", "/email/batches/nope/cancel", 404, "NOT_FOUND")

    cancelled = await calls.ok("post", f"/email/batches/{dropped}/cancel")
    assert (cancelled["status"], cancelled["pending"], cancelled["sent"]) == ("cancelled", 0, 0)
    assert cancelled["cancelledAt"]
    await calls.err("post", f"/email/batches/{dropped}/cancel", 409, "CONFLICT")
    await run_due_jobs(app.kernel, at + dt.timedelta(seconds=1), periodic=False)
    # Only the kept send's two messages left (the cancelled one's two would make four).
    assert sorted(r for e in mailbox.envelopes for r in e.rcpt_tos) == ["a@example.com", "b@example.com"]
    shown = {b["id"]: b for b in await calls.ok("get", "/email/batches")}
    assert (shown[dropped]["status"], shown[dropped]["sent"], shown[dropped]["pending"]) == ("cancelled", 0, 0)
    assert (shown[kept]["status"], shown[kept]["sent"]) == ("done", 2)
    # Started (here done): too late.
    await calls.err("post", f"/email/batches/{kept}/cancel", 409, "BATCH_STARTED")
