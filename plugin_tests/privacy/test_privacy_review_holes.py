"""Holes found in the security review of the privacy plugin (each test failed before its fix)."""

from __future__ import annotations

import asyncio


async def test_concurrent_executions_erase_and_audit_once(calls):
    await calls.collection("people", {"name": "string"}, meta={"personalData": True})
    for _ in range(3):
        await calls.create("people", {"name": "Ymir Qalbrecht"})
    made = await calls.ok("post", "/admin/erasure", 201, json={
        "collection": "people", "filter": {"name": {"_eq": "Ymir Qalbrecht"}}, "reason": "art. 17"})
    assert made["status"] == "confirmed" and made["matched"] == 3
    path = f"/admin/erasure/{made['id']}/execute"
    answers = await asyncio.gather(*(calls.call("post", path) for _ in range(4)))
    assert sorted(a.status_code for a in answers) == [200, 409, 409, 409], [a.text for a in answers]
    done = next(a.json()["data"] for a in answers if a.status_code == 200)
    assert done["recordCount"] == 3
    audit = await calls.ok("get", "/audit", params={"limit": 100})
    assert sum(1 for a in audit if a["action"] == "data_erased") == 1
    assert (await calls.ok("get", f"/admin/erasure/{made['id']}"))["recordCount"] == 3
