"""Privacy with regulated content on: a data export answers sensitive fields through the read
hook (masked for a subject without ``read_decrypted``, never as ciphertext), and an erasure
destroys the erased items' data keys (crypto-shred) besides deleting them."""

from __future__ import annotations

from sqlalchemy import select

from kernel.testing import ADMIN_PASSWORD, Calls, new_member
from plugins.regulated.envelope import MASK
from plugins.regulated.tables import data_keys

SSN = "078-05-1120"
KEY = {"SVC_ENCRYPTION_KEY": "main:" + "YWFh" * 10 + "YWE="}  # base64 of 32 bytes of "a"


async def test_export_masks_and_erasure_shreds_sensitive_fields(make_app):
    app = await make_app(env=dict(KEY))
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    await calls.collection("patients", {"name": "string", "ssn": {"type": "text", "options": {"sensitive": True}}},
                           meta={"personalData": True})
    state = await calls.ok("post", "/admin/encryption/envelope", json={"enabled": True, "password": ADMIN_PASSWORD})
    while not state["done"]:
        state = await calls.ok("post", "/admin/encryption/envelope/migrate", json={})
    member = await new_member(app, site)
    me = Calls(app.client, member.headers)
    await calls.grant([{"collection": "patients", "action": "create", "fields": ["*"]}], {"userId": member.id})
    app.kernel.access.invalidate(site)
    own = await me.create("patients", {"name": "Ann", "ssn": SSN})

    doc = await me.ok("get", "/me/data-export")
    (entry,) = doc["items"]
    assert entry["id"] == own["id"] and entry["item"]["name"] == "Ann" and entry["item"]["ssn"] == MASK
    async with app.kernel.db.connect() as conn:
        keys = (await conn.execute(select(data_keys.c.item_id, data_keys.c.wrapped).where(
            data_keys.c.site_id == site))).all()
    assert [(k[0], k[1] is not None) for k in keys] == [(own["id"], True)]

    req = await calls.ok("post", "/admin/erasure", 201, json={
        "collection": "patients", "filter": {"name": {"_eq": "Ann"}}, "reason": "Art. 17"})
    done = await calls.ok("post", f"/admin/erasure/{req['id']}/execute")
    assert done["status"] == "executed" and done["recordCount"] == 1
    async with app.kernel.db.connect() as conn:
        left = (await conn.execute(select(data_keys.c.wrapped).where(
            data_keys.c.site_id == site, data_keys.c.item_id == own["id"]))).all()
    assert all(row[0] is None for row in left)  # no key to decrypt a copy of the ciphertext with
