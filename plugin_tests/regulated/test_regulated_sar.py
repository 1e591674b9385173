"""Subject access export: the subject's records decrypted with their provenance, matched on a
sensitive field in the service (never in SQL), a forced field-access log entry, audited;
site-scoped."""

from __future__ import annotations

import json

from regulated_setup import PATIENT_FIELDS, envelope_on, site_calls


async def test_sar_export(key_app):
    site, calls = await site_calls(key_app)
    site_b, calls_b = await site_calls(key_app)
    await calls.collection("patients", PATIENT_FIELDS)
    await envelope_on(calls)
    ann = await calls.create("patients", {"name": "Ann", "ssn": "ssn-ann-7q", "diagnosis": "flu", "ward": "A"})
    await calls.create("patients", {"name": "Bob", "ssn": "222", "ward": "A"})
    await calls.ok("patch", f"/items/patients/{ann['id']}", json={"diagnosis": "cold"})

    out = await calls.ok("post", "/admin/sar/export", json={"collection": "patients",
                                                            "filter": {"ward": {"_eq": "A"}, "ssn": {"_eq": "ssn-ann-7q"}}})
    assert out["recordCount"] == 1 and out["records"][0]["id"] == ann["id"]
    assert out["records"][0]["diagnosis"] == "cold" and out["records"][0]["ssn"] == "ssn-ann-7q"
    history = out["provenance"][ann["id"]]
    assert len(history) == 2 and all(h["actor"]["userId"] for h in history)
    assert {"diagnosis"} <= set(history[0]["fields"]) and "causedBy" in history[0]
    log = await calls.ok("get", "/admin/field-access-log", params={"itemId": ann["id"]})
    assert {(e["field"], e["purpose"]) for e in log} >= {("ssn", "sar"), ("diagnosis", "sar"), ("notes", "sar")}
    audit = await calls.ok("get", "/audit", params={"action": "subject_access_exported"})
    assert audit[0]["details"]["recordCount"] == 1 and "ssn-ann-7q" not in json.dumps(audit)

    none = await calls.ok("post", "/admin/sar/export", json={"collection": "patients",
                                                             "filter": {"_and": [{"ssn": {"_eq": "999"}}]}})
    assert none["recordCount"] == 0
    # Site B: the collection does not exist there, and A's subject is not found through B.
    await calls_b.err("post", "/admin/sar/export", 404, "NOT_FOUND",
                      json={"collection": "patients", "filter": {"ssn": {"_eq": "ssn-ann-7q"}}})
    await calls_b.collection("patients", PATIENT_FIELDS)
    b = await calls_b.ok("post", "/admin/sar/export", json={"collection": "patients",
                                                            "filter": {"ssn": {"_eq": "ssn-ann-7q"}}})
    assert b["recordCount"] == 0
    assert await calls_b.ok("get", "/admin/field-access-log", params={"purpose": "x", "itemId": ann["id"]}) == []
