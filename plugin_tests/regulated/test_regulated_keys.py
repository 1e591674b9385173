"""Keys: the listing, rotation (KEY_NOT_PROVISIONED, audit), rewrap in bounded batches, and
site isolation of every key route."""

from __future__ import annotations

from regulated_setup import ENC, PATIENT_FIELDS, envelope_on, site_calls
from sqlalchemy import select

from plugins.regulated.tables import data_keys


async def key_ids(app, site):
    async with app.kernel.db.connect() as conn:
        rows = await conn.execute(select(data_keys.c.key_id).where(data_keys.c.site_id == site))
        return sorted(r[0] for r in rows)


async def test_list_rotate_rewrap(key_app):
    site, calls = await site_calls(key_app)
    site_b, calls_b = await site_calls(key_app)
    listed = await calls.ok("get", f"{ENC}/keys")
    assert [(k["id"], k["status"], k["algorithm"]) for k in listed] == [
        ("main", "active", "AES-256-GCM"), ("later", "provisioned", "AES-256-GCM"),
        ("next", "provisioned", "AES-256-GCM")]
    assert listed[0]["source"] == "SVC_ENCRYPTION_KEY"
    assert all(set(k) >= {"id", "status", "algorithm", "created", "retired"} for k in listed)
    assert "a" * 8 not in str(listed)

    await calls.collection("patients", PATIENT_FIELDS)
    await envelope_on(calls)
    made = [await calls.create("patients", {"name": f"p{i}", "ssn": f"s{i}"}) for i in range(5)]
    assert await key_ids(key_app, site) == ["main"] * 5

    await calls.err("post", f"{ENC}/keys/rotate", 422, "KEY_NOT_PROVISIONED", json={"keyId": "nope"})
    rotated = await calls.ok("post", f"{ENC}/keys/rotate", json={"keyId": "next"})
    assert (rotated["activeKeyId"], rotated["previousKeyId"], rotated["remaining"]) == ("next", "main", 5)
    again = await calls.ok("post", f"{ENC}/keys/rotate", json={"keyId": "next"})
    assert again["changed"] is False
    statuses = {k["id"]: k for k in await calls.ok("get", f"{ENC}/keys")}
    assert statuses["next"]["status"] == "active" and statuses["main"]["status"] == "retired"
    assert statuses["main"]["retired"] is not None and statuses["next"]["created"] is not None
    audit = await calls.ok("get", "/audit", params={"action": "encryption_key_rotated"})
    assert len(audit) == 1

    # Site B is untouched by A's rotation: its active key is still main, nothing to rewrap.
    assert {k["id"]: k["status"] for k in await calls_b.ok("get", f"{ENC}/keys")}["main"] == "active"
    b = await calls_b.ok("post", f"{ENC}/keys/rewrap", json={})
    assert (b["rewrapped"], b["remaining"], b["done"]) == (0, 0, True)
    assert await calls_b.ok("get", "/audit", params={"action": "encryption_key_rotated"}) == []

    new = await calls.create("patients", {"name": "new", "ssn": "fresh"})  # wrapped by the new key
    progress = await calls.ok("post", f"{ENC}/keys/rewrap", json={"limit": 2})
    assert (progress["rewrapped"], progress["remaining"], progress["done"]) == (2, 3, False)
    while not progress["done"]:
        progress = await calls.ok("post", f"{ENC}/keys/rewrap", json={"limit": 2})
    assert await key_ids(key_app, site) == ["next"] * 6
    again = await calls.ok("post", f"{ENC}/keys/rewrap", json={})
    assert (again["rewrapped"], again["done"]) == (0, True)  # idempotent
    for item in [*made, new]:
        assert (await calls.get("patients", item["id"]))["ssn"] in {f"s{i}" for i in range(5)} | {"fresh"}


async def test_a_key_no_longer_loaded_is_listed_missing(make_app, tmp_path):
    from regulated_setup import KEY_A, KEY_B
    data_dir = tmp_path / "shared"
    app = await make_app(env={"SVC_ENCRYPTION_KEY": f"main:{KEY_A}", "SVC_ENCRYPTION_KEYS": f"next:{KEY_B}"},
                         data_dir=data_dir)
    site, calls = await site_calls(app)
    await calls.collection("patients", PATIENT_FIELDS)
    await envelope_on(calls)
    item = await calls.create("patients", {"name": "x", "ssn": "kept"})
    await calls.ok("post", f"{ENC}/keys/rotate", json={"keyId": "next"})
    # The operator drops "main" before rewrapping: it is listed as missing, its values fail closed.
    later = await make_app(env={"SVC_ENCRYPTION_KEY": f"next:{KEY_B}"}, data_dir=data_dir)
    admin = {"Authorization": f"Bearer {await later.login()}", "X-Svc-Site": site}
    from kernel.testing import Calls
    again = Calls(later.client, admin)
    listed = {k["id"]: k["status"] for k in await again.ok("get", f"{ENC}/keys")}
    assert listed == {"next": "active", "main": "missing"}
    progress = await again.ok("post", f"{ENC}/keys/rewrap", json={})
    assert (progress["unavailable"], progress["remaining"], progress["done"]) == (1, 0, True)
    await again.err("get", f"/items/patients/{item['id']}", 500, "DECRYPTION_FAILED")


async def test_envelope_and_migration_are_per_site(key_app):
    from sqlalchemy import select as sel

    from plugins.items.tables import items
    site, calls = await site_calls(key_app)
    site_b, calls_b = await site_calls(key_app)
    for c in (calls, calls_b):
        await c.collection("patients", PATIENT_FIELDS)
    a = await calls.create("patients", {"name": "a", "ssn": "A-secret"})
    await calls.ok("post", f"{ENC}/envelope", json={"enabled": True, "password": "admin-password-1"})
    # B sees its own (off) state, and draining B's migration never touches A's items.
    state_b = await calls_b.ok("get", f"{ENC}/envelope")
    assert (state_b["enabled"], state_b["done"]) == (False, True)
    assert (await calls_b.ok("post", f"{ENC}/envelope/migrate", json={}))["migration"]["migrated"] == 0
    async with key_app.kernel.db.connect() as conn:
        raw = (await conn.execute(sel(items.c.data).where(items.c.site_id == site, items.c.id == a["id"]))).scalar_one()
    assert "A-secret" in str(raw)  # still waiting for A's own migration
    assert (await calls.ok("post", f"{ENC}/envelope/migrate", json={}))["done"] is True
    # A's audit has the toggle; B's has none.
    assert len(await calls.ok("get", "/audit", params={"action": "envelope_mode_changed"})) == 1
    assert await calls_b.ok("get", "/audit", params={"action": "envelope_mode_changed"}) == []
    # B's items with the same id as A's are B's own.
    b = await calls_b.create("patients", {"id": a["id"], "name": "b", "ssn": "B-secret"})
    assert (await calls_b.get("patients", b["id"]))["ssn"] == "B-secret"
    assert (await calls.get("patients", a["id"]))["ssn"] == "A-secret"
