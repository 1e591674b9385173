"""Erasure reaches the store-sync log: a target that refused the subject's document and quoted it
in its answer (``PushFailed`` keeps the target's message) leaves the quote in
``svc_store_sync_log``; the erasure deletes those entries, and no table holds the subject."""

from __future__ import annotations

import json
from typing import Any

import pytest_asyncio

from plugin_tests.privacy.test_privacy_erasure import tables_holding
from plugin_tests.store_sync.store_sync_helpers import (
    PIPES,
    RTDB_SECRET,
    FakeRtdb,
    env_for,
    grant_public_read,
    log_of,
)

EMAIL = "zelvanora.quist@example.org"


class QuotingRtdb(FakeRtdb):
    """A Realtime Database that refuses a document holding an address, quoting it back."""

    def answer(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str],
               body: bytes) -> tuple[int, Any]:
        if method == "PUT" and b"@" in body:
            self.requests.append({"method": method, "path": path, "query": query, "headers": headers, "body": body})
            return 400, {"error": f"Invalid data at {path}: {json.loads(body).get('email')} is not allowed"}
        return super().answer(method, path, query, headers, body)


@pytest_asyncio.fixture
async def svc_app(make_app):
    return await make_app(env=env_for(None))


async def test_the_sync_log_loses_what_a_target_quoted_of_the_subject(svc_app, calls):
    rtdb = QuotingRtdb()
    try:
        await _quoted_then_erased(svc_app, calls, rtdb)
    finally:
        rtdb.stop()  # fails the test if the server saw a request breaking its contract


async def _quoted_then_erased(svc_app, calls, rtdb: QuotingRtdb) -> None:
    await calls.collection("patients", {"name": "string", "email": "string"})
    await grant_public_read(calls, "patients")
    pipe = await calls.ok("post", PIPES, status=201, json={
        "name": "rt", "target": "rtdb", "credentials": {"databaseUrl": rtdb.url("/db"), "secret": RTDB_SECRET},
        "collections": ["patients"]})
    await calls.create("patients", {"name": "Zelvanora Quist", "email": EMAIL})
    log = await log_of(calls, pipe["id"], lambda entries: any(EMAIL in (e["error"] or "") for e in entries))
    assert log[0]["status"] == "failed"
    # Paused: no attempt in flight writes the log again while the erasure runs.
    await calls.ok("patch", f"{PIPES}/{pipe['id']}", json={"status": "paused"})
    assert "svc_store_sync_log" in await tables_holding(svc_app.kernel, EMAIL)
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "patients", "filter": {"email": {"_eq": EMAIL}}, "reason": "r"})
    done = await calls.ok("post", f"/admin/erasure/{req['id']}/execute")
    assert done["reached"]["storeSyncLog"] >= 1
    assert await tables_holding(svc_app.kernel, "zelvanora") == []
    assert not [e for e in await calls.ok("get", f"{PIPES}/{pipe['id']}/log") if EMAIL in (e["error"] or "")]
