"""Envelope encryption through HTTP: stored ciphertext, decrypted or masked reads on every
path, the field-access log, write answers, revisions, migration both ways, crypto-shred,
DECRYPTION_FAILED, and the site binding of ciphertext."""

from __future__ import annotations

import json
from typing import Any

import pytest
from regulated_setup import ENC, KEYS_ENV, PATIENT_FIELDS, envelope_on
from sqlalchemy import select, update

from kernel.testing import ADMIN_PASSWORD, Calls, new_member
from kernel.testing import shared as testing_shared
from plugins.items.tables import items
from plugins.regulated.envelope import MASK
from plugins.regulated.tables import data_keys

# Every test writes and reads in sites of its own: they share the module's app (started with the
# keys), each in new sites of it (kernel/testing/shared.py).
shared_site = testing_shared.shared_site_started_with(env=dict(KEYS_ENV))


@pytest.fixture
def key_app(shared_site: Any) -> Any:
    """The module's shared app, started with the encryption keys."""
    return shared_site.app


async def site_calls(shared_site: Any) -> tuple[str, Calls]:
    """A new site of the shared app, and the instance admin's calls in it."""
    calls = await shared_site.new_site()
    return calls.headers["X-Svc-Site"], calls


async def stored(app: Any, site: str, item_id: str) -> dict[str, Any]:
    async with app.kernel.db.connect() as conn:
        row = (await conn.execute(select(items.c.data).where(items.c.site_id == site, items.c.id == item_id))).first()
    data = row[0]
    return json.loads(data) if isinstance(data, str) else data


async def log_of(calls: Calls, **params: Any) -> list[dict[str, Any]]:
    return await calls.ok("get", "/admin/field-access-log", params=params)


async def test_values_are_stored_encrypted_and_read_by_permission(shared_site, key_app):
    site, calls = await site_calls(shared_site)
    await calls.collection("patients", PATIENT_FIELDS)
    await envelope_on(calls)
    made = await calls.create("patients", {"name": "Ann", "ssn": "123-45-6789", "diagnosis": "flu", "ward": "A"})
    pid = made["id"]
    assert made["ssn"] == "123-45-6789"  # the write's answer, decrypted for an admin
    raw = await stored(key_app, site, pid)
    assert raw["ssn"].startswith("renc1.") and "123-45-6789" not in json.dumps(raw)
    assert raw["name"] == "Ann" and raw.get("notes") is None

    # Admin: clear on list, get, GraphQL-free REST paths; each clear read is logged (never the value).
    listed = (await calls.list("patients"))["data"]
    assert listed[0]["ssn"] == "123-45-6789" and listed[0]["diagnosis"] == "flu"
    assert (await calls.get("patients", pid))["diagnosis"] == "flu"
    log = await log_of(calls, itemId=pid)
    assert {e["field"] for e in log} == {"ssn", "diagnosis"} and all(e["purpose"] in ("read", "sar") for e in log)
    assert "123-45-6789" not in json.dumps(log)

    # A reader without read_decrypted sees the mask; one with it on ssn only sees ssn.
    role = await calls.ok("post", "/roles", status=201, json={"name": "Ward"})
    plain = await new_member(key_app, site, role["id"])
    clear = await new_member(key_app, site, role["id"])
    await calls.grant([{"collection": "patients", "action": "read"}], {"roleId": role["id"]})
    await calls.grant([{"collection": "patients", "action": "read_decrypted", "fields": ["ssn"]}],
                      {"userId": clear.id})
    key_app.kernel.access.invalidate(site)
    as_plain, as_clear = Calls(key_app.client, plain.headers), Calls(key_app.client, clear.headers)
    got = await as_plain.get("patients", pid)
    assert (got["ssn"], got["diagnosis"], got["name"]) == (MASK, MASK, "Ann")
    got = await as_clear.get("patients", pid)
    assert (got["ssn"], got["diagnosis"]) == ("123-45-6789", MASK)
    # A read_decrypted rule with conditions is not honoured (fail closed): masked.
    cond = await new_member(key_app, site, role["id"])
    await calls.grant([{"collection": "patients", "action": "read_decrypted", "conditions": {"ward": {"_eq": "A"}}}],
                      {"userId": cond.id})
    key_app.kernel.access.invalidate(site)
    got = await Calls(key_app.client, cond.headers).get("patients", pid)
    assert (got["ssn"], got["diagnosis"]) == (MASK, MASK)
    assert {e["actorId"] for e in await log_of(calls, itemId=pid, actorId=clear.id)} == {clear.id}
    assert await log_of(calls, actorId=plain.id) == []

    # Update keeps the ciphertext of an unchanged value; a changed one is new ciphertext.
    before = await stored(key_app, site, pid)
    await calls.ok("patch", f"/items/patients/{pid}", json={"ssn": "123-45-6789", "ward": "B"})
    after = await stored(key_app, site, pid)
    assert after["ssn"] == before["ssn"] and after["ward"] == "B"
    await calls.ok("patch", f"/items/patients/{pid}", json={"diagnosis": "measles"})
    after = await stored(key_app, site, pid)
    assert after["diagnosis"] != before["diagnosis"] and after["diagnosis"].startswith("renc1.")

    # Revisions hold ciphertext and read decrypted (admin) or masked.
    revs = await calls.ok("get", f"/items/patients/{pid}/revisions")
    assert any(r["delta"].get("diagnosis", {}).get("to") == "measles" for r in revs)
    assert all(r["data"].get("ssn") == "123-45-6789" for r in revs)
    revs = await as_plain.ok("get", f"/items/patients/{pid}/revisions")
    assert all(r["data"].get("ssn") in (MASK, None) for r in revs)

    # A client may not write something that looks like ciphertext (it would read back wrong).
    await calls.err("patch", f"/items/patients/{pid}", 400, "VALIDATION_FAILED", json={"notes": before["ssn"]})
    # The mask a reader was shown, written back with the rest of the item, changes nothing of the
    # stored value; as a first value it is refused.
    kept = await stored(key_app, site, pid)
    await calls.ok("patch", f"/items/patients/{pid}", json={"ssn": MASK, "diagnosis": MASK, "ward": "C"})
    after = await stored(key_app, site, pid)
    assert (after["ssn"], after["diagnosis"], after["ward"]) == (kept["ssn"], kept["diagnosis"], "C")
    assert (await calls.get("patients", pid))["ssn"] == "123-45-6789"
    err = await calls.err("patch", f"/items/patients/{pid}", 400, "VALIDATION_FAILED", json={"notes": MASK})
    assert "notes" in err["message"]

    # Search hits and versions-free reads decrypt or mask the same way.
    hits = await calls.ok("get", "/search", params={"q": "Ann"})
    assert hits[0]["item"]["ssn"] == "123-45-6789"
    hits = await as_plain.ok("get", "/search", params={"q": "Ann"})
    assert hits[0]["item"]["ssn"] == MASK and "renc1." not in json.dumps(hits)

    # GraphQL reads through the same path.
    resp = await key_app.client.post("/api/v1/graphql", headers=calls.headers,
                                     json={"query": "{ patients { id ssn name } }"})
    body = resp.json()
    assert body["data"]["patients"][0]["ssn"] == "123-45-6789", body
    resp = await key_app.client.post("/api/v1/graphql", headers=plain.headers,
                                     json={"query": "{ patients { id ssn } }"})
    assert resp.json()["data"]["patients"][0]["ssn"] == MASK


async def test_migration_both_ways_and_crypto_shred(shared_site, key_app):
    site, calls = await site_calls(shared_site)
    await calls.collection("patients", PATIENT_FIELDS)
    made = [await calls.create("patients", {"name": f"p{i}", "ssn": f"ssn-{i}", "ward": "A"}) for i in range(5)]
    await calls.ok("patch", f"/items/patients/{made[0]['id']}", json={"ssn": "ssn-0b"})  # a revision
    assert (await stored(key_app, site, made[1]["id"]))["ssn"] == "ssn-1"  # envelope off: plaintext

    state = await calls.ok("get", f"{ENC}/envelope")
    assert state["enabled"] is False and state["done"] is True
    state = await calls.ok("post", f"{ENC}/envelope", json={"enabled": True, "password": ADMIN_PASSWORD})
    assert state["enabled"] is True and state["migration"]["state"] == "encrypting"
    seen = 0
    while not state["done"]:
        state = await calls.ok("post", f"{ENC}/envelope/migrate", json={"limit": 2})
        seen += 1
    assert seen == 3 and state["migration"]["migrated"] == 5
    for item in made:
        assert (await stored(key_app, site, item["id"]))["ssn"].startswith("renc1.")
    assert (await calls.get("patients", made[0]["id"]))["ssn"] == "ssn-0b"
    revs = await calls.ok("get", f"/items/patients/{made[0]['id']}/revisions")
    assert {r["data"]["ssn"] for r in revs} == {"ssn-0", "ssn-0b"}
    async with key_app.kernel.db.connect() as conn:
        from plugins.items.tables import revisions
        rows = (await conn.execute(select(revisions.c.data).where(revisions.c.site_id == site))).scalars().all()
    assert "ssn-0" not in json.dumps(rows)  # history was migrated too

    # Crypto-shred: the privacy plugin's event, emitted here through the bus in a transaction.
    gone = made[1]["id"]
    async with key_app.kernel.unit_of_work(site) as uow:
        result = await key_app.kernel.bus.filter("privacy.erase", {"collection": "patients", "ids": [gone]},
                                                 uow.event_context())
    assert result["shredded"] == 1
    assert (await calls.get("patients", gone))["ssn"] is None  # erased: null, never a placeholder
    await calls.err("patch", f"/items/patients/{gone}", 409, "CONFLICT", json={"ssn": "again"})

    # Off again: the values are decrypted back (a shredded item keeps its unreadable ciphertext).
    await calls.err("post", f"{ENC}/envelope", 401, "INVALID_CREDENTIALS",
                    json={"enabled": False, "password": "wrong-password"})
    state = await envelope_on(calls, enabled=False)
    assert state["enabled"] is False
    assert (await stored(key_app, site, made[2]["id"]))["ssn"] == "ssn-2"
    assert (await stored(key_app, site, gone))["ssn"].startswith("renc1.")
    assert (await calls.get("patients", made[2]["id"]))["ssn"] == "ssn-2"


async def test_decryption_failure_is_500_and_audited(shared_site, key_app):
    site, calls = await site_calls(shared_site)
    await calls.collection("patients", PATIENT_FIELDS)
    await envelope_on(calls)
    one = await calls.create("patients", {"name": "A", "ssn": "val-one-x7"})
    two = await calls.create("patients", {"name": "B", "ssn": "val-two-x7"})
    # Swap the two items' ciphertexts: each is bound to its item (associated data): neither opens.
    a, b = await stored(key_app, site, one["id"]), await stored(key_app, site, two["id"])
    async with key_app.kernel.db.begin() as conn:
        await conn.execute(update(items).where(items.c.site_id == site, items.c.id == one["id"])
                           .values(data={**a, "ssn": b["ssn"]}))
    err = await calls.err("get", f"/items/patients/{one['id']}", 500, "DECRYPTION_FAILED")
    assert "val-two-x7" not in json.dumps(err)
    resp = await calls.call("get", "/items/patients")
    assert resp.status_code == 500 and "val-one-x7" not in resp.text and "val-two-x7" not in resp.text
    audit = await calls.ok("get", "/audit", params={"action": "decryption_failed"})
    assert audit and all(e["action"] == "decryption_failed" for e in audit)


async def test_ciphertext_is_bound_to_its_site(shared_site, key_app):
    site, calls = await site_calls(shared_site)
    site_b, calls_b = await site_calls(shared_site)
    for c in (calls, calls_b):
        await c.collection("patients", PATIENT_FIELDS)
        await envelope_on(c)
    mine = await calls.create("patients", {"name": "A", "ssn": "secret-a"})
    theirs = await calls_b.create("patients", {"id": mine["id"], "name": "B", "ssn": "secret-b"})
    # Copy A's ciphertext and A's wrapped data key into B: B's context does not open them.
    a = await stored(key_app, site, mine["id"])
    async with key_app.kernel.db.begin() as conn:
        wrapped = (await conn.execute(select(data_keys.c.wrapped).where(
            data_keys.c.site_id == site, data_keys.c.item_id == mine["id"]))).scalar_one()
        await conn.execute(update(data_keys).where(data_keys.c.site_id == site_b,
                                                   data_keys.c.item_id == theirs["id"]).values(wrapped=wrapped))
        await conn.execute(update(items).where(items.c.site_id == site_b, items.c.id == theirs["id"])
                           .values(data={**a}))
    err = await calls_b.err("get", f"/items/patients/{theirs['id']}", 500, "DECRYPTION_FAILED")
    assert "secret-a" not in json.dumps(err)
    assert (await calls.get("patients", mine["id"]))["ssn"] == "secret-a"
    # Each site's log holds its own reads only: A's has its create answer and its read; B's its create answer.
    assert len(await calls.ok("get", "/admin/field-access-log")) == 2
    assert len(await calls_b.ok("get", "/admin/field-access-log")) == 1



async def test_revert_and_versions_keep_values_encrypted(shared_site, key_app):
    site, calls = await site_calls(shared_site)
    await calls.collection("patients", PATIENT_FIELDS, versioning=True)
    await envelope_on(calls)
    pid = (await calls.create("patients", {"name": "Ann", "ssn": "v1"}))["id"]
    await calls.ok("patch", f"/items/patients/{pid}", json={"ssn": "v2"})
    revs = await calls.ok("get", f"/items/patients/{pid}/revisions")
    first = next(r for r in revs if r["data"]["ssn"] == "v1")
    await calls.ok("post", f"/items/patients/{pid}/revert", json={"revisionId": first["id"]})
    assert (await calls.get("patients", pid))["ssn"] == "v1"
    assert (await stored(key_app, site, pid))["ssn"].startswith("renc1.")

    made = await calls.ok("post", f"/items/patients/{pid}/versions", status=201, json={"key": "draft"})
    assert made["data"]["ssn"] == "v1"
    changed = await calls.ok("patch", f"/items/patients/{pid}/versions/draft", json={"data": {"ssn": "v3"}})
    assert changed["data"]["ssn"] == "v3"
    async with key_app.kernel.db.connect() as conn:
        from plugins.items.tables import versions
        data = (await conn.execute(select(versions.c.data).where(versions.c.site_id == site))).scalar_one()
    data = json.loads(data) if isinstance(data, str) else data
    assert data["ssn"].startswith("renc1.")  # a version's content is encrypted on write too
    compared = await calls.ok("get", f"/items/patients/{pid}/versions/draft/compare")
    assert (compared["main"]["ssn"], compared["version"]["ssn"], compared["changes"]) == ("v1", "v3", ["ssn"])
    await calls.ok("post", f"/items/patients/{pid}/versions/draft/promote", json={})
    assert (await calls.get("patients", pid))["ssn"] == "v3"


async def test_marking_and_unmarking_a_field(shared_site, key_app):
    site, calls = await site_calls(shared_site)
    await calls.collection("patients", {"name": "string", "history": "text"})
    pid = (await calls.create("patients", {"name": "Ann", "history": "asthma since childhood"}))["id"]
    assert [h["id"] for h in await calls.ok("get", "/search", params={"q": "asthma"})] == [pid]
    await envelope_on(calls)
    # Marked sensitive while envelope mode is on: it leaves the search index, the migration restarts.
    await calls.ok("patch", "/fields/patients/history", json={"options": {"sensitive": True}})
    assert await calls.ok("get", "/search", params={"q": "asthma"}) == []
    state = await calls.ok("get", f"{ENC}/envelope")
    assert state["migration"]["state"] == "encrypting"
    while not state["done"]:
        state = await calls.ok("post", f"{ENC}/envelope/migrate", json={})
    assert (await stored(key_app, site, pid))["history"].startswith("renc1.")
    # Unmarking while values may be encrypted is refused; after envelope off and migrated back, allowed.
    await calls.err("patch", "/fields/patients/history", 409, "CONFLICT", json={"options": {"sensitive": False}})
    await envelope_on(calls, enabled=False)
    await calls.ok("patch", "/fields/patients/history", json={"options": {}})
    assert (await stored(key_app, site, pid))["history"] == "asthma since childhood"
    assert [h["id"] for h in await calls.ok("get", "/search", params={"q": "asthma"})] == [pid]


async def test_nested_related_items_delivery_and_no_hook_without_sensitive_fields(shared_site, key_app):
    site, calls = await site_calls(shared_site)
    await calls.collection("patients", PATIENT_FIELDS)
    await calls.collection("visits", {"when": "string", "patient": "uuid"})
    await calls.relation(type="m2o", collection="visits", field="patient", relatedCollection="patients",
                         relatedField="visits")
    await envelope_on(calls)
    pid = (await calls.create("patients", {"name": "Ann", "ssn": "nested-ssn-4k"}))["id"]
    vid = (await calls.create("visits", {"when": "today", "patient": pid}))["id"]
    got = await calls.get("visits", vid, params={"fields": "*,patient.*"})
    assert got["patient"]["ssn"] == "nested-ssn-4k"
    got = await calls.get("patients", pid, params={"fields": "*,visits.*"})
    assert got["ssn"] == "nested-ssn-4k" and got["visits"][0]["id"] == vid
    role = await calls.ok("post", "/roles", status=201, json={"name": "Desk"})
    member = await new_member(key_app, site, role["id"])
    await calls.grant([{"collection": c, "action": "read"} for c in ("patients", "visits")], {"roleId": role["id"]})
    key_app.kernel.access.invalidate(site)
    got = await Calls(key_app.client, member.headers).get("visits", vid, params={"fields": "*,patient.*"})
    assert got["patient"]["ssn"] == MASK

    # Public delivery reads as the public role: masked unless that role holds read_decrypted.
    public = next(r for r in await calls.ok("get", "/roles") if r.get("systemKey") == "public")
    await calls.grant([{"collection": "patients", "action": "read"}], {"roleId": public["id"]})
    key_app.kernel.access.invalidate(site)
    resp = await key_app.client.get("/api/v1/deliver/items/patients", headers={"X-Svc-Site": site})
    assert resp.status_code == 200 and resp.json()["data"][0]["ssn"] == MASK
    assert "nested-ssn-4k" not in resp.text

    # A site without sensitive fields never runs the read hook.
    seen = []
    off = key_app.kernel.bus.on_filter("items.read", lambda event, payload, ctx: seen.append(payload["siteId"]))
    try:
        other, calls_o = await site_calls(shared_site)
        await calls_o.collection("notes", {"body": "text"})
        note = await calls_o.create("notes", {"body": "hello"})
        await calls_o.get("notes", note["id"])
        await calls_o.list("notes")
        assert other not in seen
        await calls.get("patients", pid)
    finally:
        off()  # the shared app outlives the test
    assert site in seen
