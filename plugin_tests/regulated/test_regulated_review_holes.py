"""Holes found in the security review of the regulated plugin (each test failed before its fix)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("param", ["collection", "itemId", "actorId"])
async def test_a_nul_in_a_field_access_log_filter_is_400_not_a_500(calls, param):
    """PostgreSQL refuses NUL in text (was 500 INTERNAL on PostgreSQL)."""
    await calls.err("get", "/admin/field-access-log", 400, "VALIDATION_FAILED", path_is=["query", param],
                    params={param: "a\x00b"})


async def test_the_copilot_never_holds_a_sensitive_value_in_clear(make_app):
    """A skill's result goes to the model provider and is kept in the conversation and approval
    rows (plaintext at rest, not crypto-shredded by an erasure): sensitive fields reach it masked,
    whoever asks (the admin too)."""
    from regulated_setup import KEYS_ENV, PATIENT_FIELDS, envelope_on, site_calls
    from sqlalchemy import text

    from plugins.regulated.envelope import MASK

    app = await make_app(env=KEYS_ENV)
    _site, calls = await site_calls(app)
    await calls.collection("patients", PATIENT_FIELDS)
    await envelope_on(calls)
    secret = "SSN-Qz81-77410"
    made = await calls.create("patients", {"name": "Ada", "ssn": secret, "ward": "A"})
    assert (await calls.get("patients", made["id"]))["ssn"] == secret  # the admin reads it in clear over REST
    read = await calls.ok("post", "/ai/chat", json={"message": "read patients"})
    assert read["status"] == "executed" and read["data"][0]["ssn"] == MASK
    resp = await calls.call("post", "/ai/chat", json={"message": f'update patients {made["id"]} {{"ward": "B"}}'})
    decided = await calls.ok("post", f"/ai/approvals/{resp.json()['data']['approvalId']}/decide",
                             json={"decision": "approved"})
    assert decided["status"] == "approved" and decided["result"]["ssn"] == MASK
    async with app.kernel.db.connect() as conn:
        for table in ("svc_ai_messages", "svc_ai_approvals"):
            rows = (await conn.execute(text(f"SELECT * FROM {table}"))).all()
            assert rows and not any(secret in str(row) for row in rows), table
    assert (await calls.get("patients", made["id"]))["ssn"] == secret


async def test_an_impersonation_reads_masked_so_the_access_log_never_names_the_wrong_reader(make_app):
    """The field-access log names who read a value in clear; an admin impersonating a member who
    holds ``read_decrypted`` would be logged as the member. Impersonation reads the mask."""
    from regulated_setup import KEYS_ENV, PATIENT_FIELDS, envelope_on, site_calls

    from kernel.testing import Calls, new_member
    from plugins.regulated.envelope import MASK

    app = await make_app(env=KEYS_ENV)
    site, calls = await site_calls(app)
    await calls.collection("patients", PATIENT_FIELDS)
    await envelope_on(calls)
    made = await calls.create("patients", {"name": "Ada", "ssn": "SSN-Qz81-77410", "ward": "A"})
    member = await new_member(app, site)
    await calls.grant([{"collection": "patients", "action": "read", "fields": ["*"]},
                       {"collection": "patients", "action": "read_decrypted", "fields": ["*"]}], {"userId": member.id})
    app.kernel.access.invalidate(site)
    me = Calls(app.client, member.headers)
    assert (await me.get("patients", made["id"]))["ssn"] == "SSN-Qz81-77410"
    token = (await calls.ok("post", f"/users/{member.id}/impersonate"))["token"]
    posing = Calls(app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site})
    assert (await posing.get("patients", made["id"]))["ssn"] == MASK
    log = await calls.ok("get", "/admin/field-access-log", params={"actorId": member.id})
    assert {e["field"] for e in log} == {"ssn"} and len(log) == 1  # the member's own read only
