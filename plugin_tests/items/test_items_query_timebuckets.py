"""``groupBy=trunc_day|week|month(<date field>)``: time buckets as YYYY-MM-DD text, the same on
SQLite and PostgreSQL (this module runs in both passes)."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


async def _seed(calls):
    await calls.collection("events", {"at": "dateTime", "on": "date", "label": "string", "local": "dateTime"})
    await calls.create("events", [
        {"at": "2026-02-28T23:30:00-01:00", "on": "2026-03-01", "label": "a", "local": "2026-03-01T00:30:00"},
        {"at": "2026-03-01T00:00:00Z", "on": "2026-03-01", "label": "b", "local": "2026-03-01T23:59:00"},
        {"at": "2026-03-04T12:00:00Z", "on": "2026-03-04", "label": "c", "local": "2026-03-04T12:00:00"},
        {"at": None, "on": None, "label": "d", "local": None},
    ])


async def test_buckets(calls):
    await _seed(calls)

    async def counts(group):
        body = await calls.list("events", **{"aggregate[count]": "*", "groupBy": group})
        return [(row[group], row["count"]) for row in body["data"]]

    assert await counts("trunc_day(at)") == [(None, 1), ("2026-03-01", 2), ("2026-03-04", 1)]
    assert await counts("trunc_week(at)") == [(None, 1), ("2026-02-23", 2), ("2026-03-02", 1)]
    assert await counts("trunc_month(on)") == [(None, 1), ("2026-03-01", 3)]
    assert await counts("trunc_day(local)") == [(None, 1), ("2026-03-01", 2), ("2026-03-04", 1)]
    created = await counts("trunc_month(createdAt)")
    assert len(created) == 1 and created[0][1] == 4


async def test_bucket_faults(calls):
    await _seed(calls)
    for group, path in (("trunc_day(label)", ["query", "groupBy", "trunc_day(label)"]),
                        ("trunc_year(at)", ["query", "groupBy"]),
                        ("trunc_day(at.x)", ["query", "groupBy", "trunc_day(at.x)"]),
                        ("trunc_day(nothing)", ["query", "groupBy", "trunc_day(nothing)"])):
        await calls.err("get", "/items/events", 400, "VALIDATION_FAILED", path_is=path,
                        params={"aggregate[count]": "*", "groupBy": group})


async def test_a_hidden_field_cannot_be_bucketed(svc_app, site, calls, make_member):
    await _seed(calls)
    made = await make_member(site, "subscriber")
    await calls.grant([{"collection": "events", "action": "read", "fields": ["label"]}], {"userId": made.id})
    svc_app.kernel.access.invalidate(site)
    member = Calls(svc_app.client, made.headers)
    error = await member.err("get", "/items/events", 403, "PERMISSION_DENIED",
                             params={"aggregate[count]": "*", "groupBy": "trunc_week(at)"})
    assert error["extensions"]["reason"] == "field_policy"
