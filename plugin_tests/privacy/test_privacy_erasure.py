"""Erasure: a request stores a subject hash (never the filter's values, never echoed), dual
control by a second admin of the same site, execution hard-deletes the items and everything
kept of them, and afterwards no table of the database holds the erased value (SQLite and
PostgreSQL). Plus bad bodies, cross-tenant, and the ``privacy.erase`` filter."""

from __future__ import annotations

import pytest
import pytest_asyncio
from sqlalchemy import text

from kernel import ApiError
from kernel.testing import Calls

SECRET = "Zorbulon Quixtable 7731"


async def tables_holding(kernel, needle: str) -> list[str]:
    """Every table (all columns as text, binary columns too, ignoring case) with a row holding
    ``needle``."""
    found = []
    async with kernel.db.connect() as conn:
        if kernel.db.dialect == "postgresql":
            names = (await conn.execute(text(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_type = 'BASE TABLE'"))).scalars().all()
            for name in names:
                hit = (await conn.execute(text(f'SELECT count(*) FROM "{name}" AS r WHERE r::text ILIKE :n'),
                                          {"n": f"%{needle}%"})).scalar()
                if hit:
                    found.append(name)
        else:
            names = (await conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))).scalars().all()
            for name in names:
                rows = (await conn.execute(text(f'SELECT * FROM "{name}"'))).all()
                # bytes too: FTS5 keeps its (lower-cased) words in binary segments.
                if any(needle.lower() in " ".join(v.decode("latin-1") if isinstance(v, bytes) else str(v)
                                                  for v in row).lower() for row in rows):
                    found.append(name)
        await conn.rollback()
    return sorted(found)


async def _patients(calls: Calls) -> tuple[dict, dict]:
    await calls.collection("patients", {"name": "string", "note": "text"}, versioning=True,
                           meta={"personalData": True})
    subject = await calls.create("patients", {"name": SECRET, "note": f"about {SECRET}"})
    await calls.ok("patch", f"/items/patients/{subject['id']}", json={"note": f"seen {SECRET} again"})
    await calls.ok("post", f"/items/patients/{subject['id']}/versions", 201,
                   json={"key": "draft", "name": "Draft"})
    await calls.ok("patch", f"/items/patients/{subject['id']}/versions/draft", json={"data": {"note": f"{SECRET} v2"}})
    gone_already = await calls.create("patients", {"name": SECRET, "note": "soft-deleted copy"})
    await calls.ok("delete", f"/items/patients/{gone_already['id']}", 204)
    other = await calls.create("patients", {"name": "Somebody Else", "note": "kept"})
    return subject, other


async def test_erasure_with_dual_control_leaves_nothing_anywhere(svc_app, site, site_b, calls, calls_b, make_member):
    kernel = svc_app.kernel
    subject, other = await _patients(calls)
    found = await calls.ok("get", "/search", full=True, params={"q": "Zorbulon"})
    assert [r["id"] for r in found["data"]] == [subject["id"]]
    before = await tables_holding(kernel, SECRET)
    assert {"svc_items", "svc_item_revisions", "svc_item_versions", "svc_search"} <= set(before)  # the scan sees it

    await calls.ok("put", "/settings/erasureDualControl", json={"value": True})
    shredded = []
    unsubscribe = kernel.bus.on_filter("privacy.erase", lambda event, payload, ctx: shredded.append(payload))
    try:
        resp = await calls.call("post", "/admin/erasure",
                                json={"collection": "patients", "filter": {"name": {"_eq": SECRET}},
                                      "reason": "Art. 17 request #12"})
        assert resp.status_code == 201 and SECRET not in resp.text and "Zorbulon" not in resp.text
        req = resp.json()["data"]
        assert req["status"] == "awaiting_confirmation" and req["dualControl"] is True and req["matched"] == 2
        assert req["filterFields"] == ["name"] and len(req["subjectHash"]) == 64
        base = f"/admin/erasure/{req['id']}"
        await calls.err("post", f"{base}/execute", 409, "CONFLICT")
        # The requester cannot confirm their own request.
        err = await calls.err("post", f"{base}/confirm", 403, "PERMISSION_DENIED")
        assert err["extensions"]["reason"] == "dual_control"
        # An admin of another site can neither confirm nor execute it, from either site.
        admin_b = await make_member(site_b, role="admin")
        as_b_in_a = Calls(svc_app.client, {**admin_b.headers, "X-Svc-Site": site})
        await as_b_in_a.err("post", f"{base}/confirm", 401, "UNAUTHENTICATED")  # B's token, A's site
        member_of_a = Calls(svc_app.client, (await make_member(site)).headers)
        await member_of_a.err("post", f"{base}/confirm", 403, "PERMISSION_DENIED")
        as_b = Calls(svc_app.client, admin_b.headers)
        await as_b.err("post", f"{base}/confirm", 404, "NOT_FOUND")
        await as_b.err("post", f"{base}/execute", 404, "NOT_FOUND")
        await as_b.err("get", base, 404, "NOT_FOUND")
        assert await calls_b.ok("get", "/admin/erasure") == []
        # A second admin of the same site confirms; then it executes once.
        second = Calls(svc_app.client, (await make_member(site, role="admin")).headers)
        confirmed = await second.ok("post", f"{base}/confirm")
        assert confirmed["status"] == "confirmed" and confirmed["confirmedBy"] != req["requestedBy"]
        await second.err("post", f"{base}/confirm", 409, "CONFLICT")
        resp = await calls.call("post", f"{base}/execute")
        assert resp.status_code == 200 and SECRET not in resp.text
        done = resp.json()["data"]
        assert done["status"] == "executed" and done["recordCount"] == 2
        await calls.err("post", f"{base}/execute", 409, "CONFLICT")
    finally:
        unsubscribe()
    assert shredded and shredded[0]["collection"] == "patients" and len(shredded[0]["ids"]) == 2
    assert subject["id"] in shredded[0]["ids"]

    await calls.err("get", f"/items/patients/{subject['id']}", 404)
    assert (await calls.get("patients", other["id"]))["name"] == "Somebody Else"
    assert (await calls.ok("get", "/search", full=True, params={"q": "Zorbulon"}))["data"] == []
    [entry] = await calls.ok("get", "/audit", params={"action": "data_erased"})
    assert entry["details"] == {"collection": "patients", "recordCount": 2}
    trail = await calls.ok("get", "/audit", params={"targetType": "erasure", "targetId": req["id"]})
    assert sorted(a["action"] for a in trail) == ["data_erased", "erasure_confirmed", "erasure_requested"]
    assert await tables_holding(kernel, SECRET) == []
    assert await tables_holding(kernel, "Zorbulon") == []
    assert await tables_holding(kernel, "quixtab") == []  # a stem of the second word
    # Change-feed events name the item, never its values.
    events = (await kernel.events.read_after(site, types=["items.*"])).events
    assert any(e.item_id == subject["id"] for e in events)


async def test_without_dual_control_a_request_executes_at_once(svc_app, site, calls):
    subject, _ = await _patients(calls)
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "patients", "filter": {"id": {"_eq": subject["id"]}}, "reason": "r"})
    assert req["status"] == "confirmed" and req["dualControl"] is False and req["matched"] == 1
    await calls.err("post", f"/admin/erasure/{req['id']}/confirm", 409, "CONFLICT")
    assert (await calls.ok("post", f"/admin/erasure/{req['id']}/execute"))["recordCount"] == 1
    listed = await calls.ok("get", "/admin/erasure", full=True)
    assert listed["meta"]["total"] == 1 and listed["data"][0]["status"] == "executed"


async def test_a_veto_of_privacy_erase_rolls_everything_back(svc_app, site, calls):
    subject, _ = await _patients(calls)

    def veto(event, payload, ctx):
        raise ApiError(500, "DECRYPTION_FAILED", "cannot shred")

    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "patients", "filter": {"name": {"_eq": SECRET}}, "reason": "r"})
    unsubscribe = svc_app.kernel.bus.on_filter("privacy.erase", veto)
    try:
        await calls.err("post", f"/admin/erasure/{req['id']}/execute", 500, "DECRYPTION_FAILED")
    finally:
        unsubscribe()
    assert (await calls.get("patients", subject["id"]))["name"] == SECRET
    assert (await calls.ok("get", f"/admin/erasure/{req['id']}"))["status"] == "confirmed"
    assert await calls.ok("get", "/audit", params={"action": "data_erased"}) == []


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seeded(shared_site):
    await shared_site.calls.collection("people", {"name": "string"})
    return shared_site


@pytest.mark.parametrize("body,path", [
    ({"filter": {"name": {"_eq": "x"}}, "reason": "r"}, ["collection"]),
    ({"collection": 5, "filter": {"name": {"_eq": "x"}}, "reason": "r"}, ["collection"]),
    ({"collection": "people", "reason": "r"}, ["filter"]),
    ({"collection": "people", "filter": {}, "reason": "r"}, ["filter"]),
    ({"collection": "people", "filter": ["x"], "reason": "r"}, ["filter"]),
    ({"collection": "people", "filter": "name=x", "reason": "r"}, ["filter"]),
    ({"collection": "people", "filter": {"name": {"_eq": "x"}}}, ["reason"]),
    ({"collection": "people", "filter": {"name": {"_eq": "x"}}, "reason": " "}, ["reason"]),
    ({"collection": "people", "filter": {"name": {"_eq": "x"}}, "reason": "r" * 501}, ["reason"]),
    ({"collection": "people", "filter": {"name": {"_eq": "x"}}, "reason": "r", "status": "executed"}, ["status"]),
    ({"collection": "people", "filter": {"nope": {"_eq": "Hidden Value 42"}}, "reason": "r"}, ["filter"]),
    ({"collection": "people", "filter": {"name": {"_bogus": "Hidden Value 42"}}, "reason": "r"}, ["filter"]),
    ([], ["body"]),
])
async def test_bad_erasure_bodies_are_400_and_never_echo_values(seeded, body, path):
    resp = await seeded.calls.call("post", "/admin/erasure", json=body)
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED" and error.get("path") == path
    assert "Hidden Value" not in resp.text


async def test_unknown_collection_and_ids(seeded):
    await seeded.calls.err("post", "/admin/erasure", 404,
                           json={"collection": "nothing", "filter": {"a": {"_eq": 1}}, "reason": "r"})
    for op in ("confirm", "execute"):
        await seeded.calls.err("post", f"/admin/erasure/{'x' * 80}/{op}", 404, "NOT_FOUND")
        await seeded.calls.err("post", f"/admin/erasure/unknown/{op}", 404, "NOT_FOUND")


async def test_members_cannot_use_erasure(seeded):
    member = await seeded.member()
    await member.err("get", "/admin/erasure", 403, "PERMISSION_DENIED")
    await member.err("post", "/admin/erasure", 403, "PERMISSION_DENIED",
                     json={"collection": "people", "filter": {"name": {"_eq": "x"}}, "reason": "r"})
    req = await seeded.calls.ok("post", "/admin/erasure", 201,
                                json={"collection": "people", "filter": {"name": {"_eq": "nobody"}}, "reason": "r"})
    await member.err("get", f"/admin/erasure/{req['id']}", 403, "PERMISSION_DENIED")
    await member.err("post", f"/admin/erasure/{req['id']}/confirm", 403, "PERMISSION_DENIED")
    await member.err("post", f"/admin/erasure/{req['id']}/execute", 403, "PERMISSION_DENIED")


async def test_dual_control_setting_is_a_boolean(seeded):
    await seeded.calls.err("put", "/settings/erasureDualControl", 400, "VALIDATION_FAILED", json={"value": "yes"})


def _jpeg() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(out, "JPEG")
    return out.getvalue()


async def test_an_erased_items_files_and_their_derivatives_go_too(svc_app, site, calls):
    kernel = svc_app.kernel
    await calls.collection("people", {"name": "string", "photos": "files"})
    photo = await calls.ok("put", f"/files/upload/{SECRET.split()[0].lower()}.jpg", 201, content=_jpeg(),
                           headers={"Content-Type": "image/jpeg"})
    kept = await calls.ok("put", "/files/upload/logo.jpg", 201, content=_jpeg(), headers={"Content-Type": "image/jpeg"})
    person = await calls.create("people", {"name": SECRET, "photos": [photo["id"]]})
    await calls.create("people", {"name": "Other", "photos": [kept["id"]]})
    resp = await calls.call("get", f"/assets/{photo['id']}", params={"width": 10})
    assert resp.status_code == 200
    prefix = f"{site}/derivatives/{photo['id']}/"
    assert await kernel.storage.list(prefix)  # a derivative was stored
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "people", "filter": {"id": {"_eq": person["id"]}}, "reason": "r"})
    assert (await calls.ok("post", f"/admin/erasure/{req['id']}/execute"))["recordCount"] == 1
    await calls.err("get", f"/files/{photo['id']}", 404)
    assert await kernel.storage.list(prefix) == []
    assert (await calls.call("get", f"/assets/{kept['id']}")).status_code == 200
    assert await tables_holding(kernel, "zorbulon") == []
    # An ordinary delete keeps the files (only an erasure takes them).
    other = await calls.create("people", {"name": "x", "photos": [kept["id"]]})
    await calls.ok("delete", f"/items/people/{other['id']}", 204)
    assert (await calls.call("get", f"/assets/{kept['id']}")).status_code == 200


async def test_an_erased_address_leaves_queued_mail(make_app, mailbox, run_due_jobs):
    app = await make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port,
                         env={"SVC_EMAIL_FROM": "News <news@example.com>", "SVC_EMAIL_QUEUE_THRESHOLD": "0"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    address = "zorbulon.quixtable@example.org"
    await calls.collection("contacts", {"email": "string"})
    await calls.create("contacts", {"email": address})
    inline = {"subject": "Hello", "text": "Hi"}
    await calls.ok("post", "/email/send", 202, json={"to": [address, "keep@example.org"], "category": "marketing",
                                                      "inline": inline})
    await calls.ok("post", "/email/send", 202, json={"to": [f"Zorbulon <{address.upper()}>", "team@example.org"],
                                                      "inline": inline})
    assert "svc_jobs" in await tables_holding(app.kernel, address)
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "contacts", "filter": {"email": {"_eq": address}}, "reason": "r"})
    await calls.ok("post", f"/admin/erasure/{req['id']}/execute")
    assert await tables_holding(app.kernel, "zorbulon") == []
    runs = [r for r in await run_due_jobs(app.kernel, periodic=False) if r.name == "email.deliver"]
    assert len(runs) == 2 and all(r.ok for r in runs)  # the marketing one to the address is gone
    await mailbox.wait_for(2)
    assert sorted(m["To"] for m in mailbox.messages()) == ["keep@example.org", "team@example.org"]


async def test_an_erasure_matches_only_its_own_sites_items(svc_app, site, site_b, calls, calls_b):
    for c in (calls, calls_b):
        await c.collection("people", {"name": "string"})
    await calls.create("people", {"name": SECRET})
    theirs = await calls_b.create("people", {"name": SECRET})
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "people", "filter": {"name": {"_eq": SECRET}}, "reason": "r"})
    assert req["matched"] == 1
    assert (await calls.ok("post", f"/admin/erasure/{req['id']}/execute"))["recordCount"] == 1
    assert (await calls_b.get("people", theirs["id"]))["name"] == SECRET
    # The same subject in B hashes differently: a hash never links sites.
    req_b = await calls_b.ok("post", "/admin/erasure", 201,
                             json={"collection": "people", "filter": {"name": {"_eq": SECRET}}, "reason": "r"})
    assert req_b["subjectHash"] != req["subjectHash"]
