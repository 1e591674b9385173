"""Sensitive fields are never an oracle: filter, sort, groupBy, aggregate, deep, _or/_and
nesting, relations, search and GraphQL arguments naming one are 400 (reason sensitive_field);
the option's own checks; bad bodies on every route of the plugin; non-admins refused."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
from regulated_setup import ENC, PATIENT_FIELDS

from kernel.testing import Calls
from plugins.regulated.envelope import MASK


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seeded(shared_site):
    calls = shared_site.calls
    await calls.collection("patients", PATIENT_FIELDS)
    await calls.collection("visits", {"when": "string", "patient": "uuid"})
    await calls.relation(type="m2o", collection="visits", field="patient", relatedCollection="patients",
                         relatedField="visits")
    patient = await calls.create("patients", {"name": "Ann", "ssn": "ssn-val-9z", "diagnosis": "flu"})
    await calls.create("visits", {"when": "today", "patient": patient["id"]})
    return calls


REFUSED = [
    ("/items/patients", {"filter": json.dumps({"ssn": {"_eq": "ssn-val-9z"}})}),
    ("/items/patients", {"filter": json.dumps({"ssn": {"_starts_with": "1"}})}),
    ("/items/patients", {"filter": json.dumps({"_or": [{"name": {"_eq": "x"}}, {"ssn": {"_null": False}}]})}),
    ("/items/patients", {"filter": json.dumps({"_and": [{"_or": [{"diagnosis": {"_contains": "f"}}]}]})}),
    ("/items/patients", {"filter[ssn][_eq]": "ssn-val-9z"}),
    ("/items/patients", {"sort": "ssn"}),
    ("/items/patients", {"sort": "-diagnosis"}),
    ("/items/patients", {"groupBy": "ssn", "aggregate[count]": "*"}),
    ("/items/patients", {"aggregate[countDistinct]": "ssn"}),
    ("/items/patients", {"aggregate[min]": "diagnosis"}),
    ("/items/visits", {"filter": json.dumps({"patient": {"ssn": {"_eq": "ssn-val-9z"}}})}),
    ("/items/visits", {"sort": "patient.ssn"}),
    ("/items/visits", {"groupBy": "patient.diagnosis", "aggregate[count]": "*"}),
    ("/items/patients", {"fields": "*,visits.*", "deep": json.dumps({"visits": {"_filter": {
        "patient": {"ssn": {"_eq": "ssn-val-9z"}}}}})}),
]


@pytest.mark.parametrize(("path", "params"), REFUSED)
async def test_queries_naming_a_sensitive_field_are_400(seeded, path, params):
    err = await seeded.err("get", path, 400, "VALIDATION_FAILED", params=params)
    assert err["extensions"]["reason"] == "sensitive_field"
    assert "ssn-val-9z" not in json.dumps(err)


async def test_search_never_matches_a_sensitive_field(seeded, shared_site):
    assert await seeded.ok("get", "/search", params={"q": "flu"}) == []
    hits = await seeded.ok("get", "/search", params={"q": "Ann"})
    assert [h["collection"] for h in hits] == ["patients"] and set(hits[0]["highlights"]) == {"name"}
    assert hits[0]["item"]["diagnosis"] == "flu"  # an admin reads in clear
    member = await shared_site.member([{"collection": "patients", "action": "read"}])
    hits = await member.ok("get", "/search", params={"q": "Ann"})
    assert hits[0]["item"]["diagnosis"] == MASK and "flu" not in json.dumps(hits)


@pytest.mark.parametrize("query", [
    '{ patients(filter: { ssn: { _eq: "ssn-val-9z" } }) { id } }',
    '{ patients(sort: ["ssn"]) { id } }',
    '{ patients(filter: { _or: [{ diagnosis: { _null: false } }] }) { id } }',
])
async def test_graphql_arguments_naming_a_sensitive_field_are_refused(seeded, query):
    resp = await seeded.client.post("/api/v1/graphql", headers=seeded.headers, json={"query": query})
    body = resp.json()
    assert body.get("data") in (None, {"patients": None}) and body["errors"], body
    assert body["errors"][0]["extensions"]["code"] in ("VALIDATION", "INVALID_FILTER", "VALIDATION_FAILED")
    assert "ssn-val-9z" not in json.dumps(body["errors"])


@pytest.mark.parametrize(("field", "path"), [
    ({"field": "x1", "type": "string", "options": {"sensitive": True}}, ["options", "sensitive"]),
    ({"field": "x2", "type": "text", "options": {"sensitive": "yes"}}, ["options", "sensitive"]),
    ({"field": "x3", "type": "text", "options": {"sensitive": True, "unique": True}}, ["options", "unique"]),
    ({"field": "x4", "type": "text", "options": {"sensitive": True, "maxLength": 20}}, ["options", "maxLength"]),
    ({"field": "x5", "type": "text", "options": {"sensitive": True, "default": "x"}}, ["options", "default"]),
])
async def test_the_sensitive_option_is_checked(seeded, field, path):
    await seeded.err("post", "/fields/patients", 400, "VALIDATION_FAILED", path_is=path, json=field)


BAD = [
    ("post", f"{ENC}/keys/rotate", {}, ["keyId"]),
    ("post", f"{ENC}/keys/rotate", {"keyId": 5}, ["keyId"]),
    ("post", f"{ENC}/keys/rotate", {"keyId": "main", "extra": 1}, ["extra"]),
    ("post", f"{ENC}/keys/rotate", [], ["body"]),
    ("post", f"{ENC}/keys/rewrap", {"limit": 0}, ["limit"]),
    ("post", f"{ENC}/keys/rewrap", {"limit": "5"}, ["limit"]),
    ("post", f"{ENC}/keys/rewrap", {"limit": True}, ["limit"]),
    ("post", f"{ENC}/keys/rewrap", {"nope": 1}, ["nope"]),
    ("post", f"{ENC}/envelope", {"enabled": "yes", "password": "x"}, ["enabled"]),
    ("post", f"{ENC}/envelope", {"enabled": True}, ["password"]),
    ("post", f"{ENC}/envelope", {"enabled": True, "password": ""}, ["password"]),
    ("post", f"{ENC}/envelope", {"enabled": True, "password": "x", "keyId": "a"}, ["keyId"]),
    ("post", f"{ENC}/envelope", "on", ["body"]),
    ("post", f"{ENC}/envelope/migrate", {"limit": 5000}, ["limit"]),
    ("post", f"{ENC}/envelope/migrate", {"x": 1}, ["x"]),
    ("post", "/admin/sar/export", {"collection": "patients"}, ["filter"]),
    ("post", "/admin/sar/export", {"collection": 3, "filter": {"name": {"_eq": "Ann"}}}, ["collection"]),
    ("post", "/admin/sar/export", {"collection": "patients", "filter": []}, ["filter"]),
    ("post", "/admin/sar/export", {"collection": "patients", "filter": {"ssn": {"_contains": "1"}}},
     ["filter", "ssn"]),
    ("post", "/admin/sar/export", {"collection": "patients", "filter": {"_or": [{"ssn": {"_eq": "1"}}]}}, None),
    ("post", "/admin/sar/export", {"collection": "patients", "filter": {"name": {"_eq": "A"}}, "x": 1}, ["x"]),
]


@pytest.mark.parametrize(("method", "path", "body", "where"), BAD)
async def test_bad_bodies_are_400(seeded, method, path, body, where):
    err = await seeded.err(method, path, 400, "VALIDATION_FAILED", json=body)
    if where is not None:
        assert err.get("path") == where, err


@pytest.mark.parametrize("raw", [b"{", b"\xff", b"null"])
async def test_malformed_json_is_400(seeded, raw):
    for path in (f"{ENC}/keys/rotate", f"{ENC}/envelope", "/admin/sar/export"):
        resp = await seeded.call("post", path, content=raw, headers={"Content-Type": "application/json"})
        assert resp.status_code == 400, (path, resp.text)


async def test_without_a_key_the_routes_say_so(seeded):
    await seeded.err("post", f"{ENC}/keys/rotate", 400, "ENCRYPTION_KEY_REQUIRED", json={"keyId": "main"})
    assert await seeded.ok("get", f"{ENC}/keys") == []


async def test_sar_and_log_unknown_collection(seeded):
    await seeded.err("post", "/admin/sar/export", 404, "NOT_FOUND",
                     json={"collection": "nope", "filter": {"id": {"_eq": "1"}}})
    await seeded.err("get", "/admin/field-access-log", 400, "VALIDATION_FAILED", params={"collection": "x" * 65})


ROUTES = [("get", f"{ENC}/keys", None), ("post", f"{ENC}/keys/rotate", {"keyId": "main"}),
          ("post", f"{ENC}/keys/rewrap", {}), ("get", f"{ENC}/envelope", None),
          ("post", f"{ENC}/envelope", {"enabled": True, "password": "member-password-1"}),
          ("post", f"{ENC}/envelope/migrate", {}), ("get", "/admin/field-access-log", None),
          ("post", "/admin/sar/export", {"collection": "patients", "filter": {"name": {"_eq": "Ann"}}})]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
async def test_only_site_admins(seeded, shared_site, method, path, body):
    member: Calls = await shared_site.member([{"collection": "patients", "action": "read"},
                                              {"collection": "patients", "action": "read_decrypted"}])
    await member.err(method, path, 403, "PERMISSION_DENIED", **({"json": body} if body is not None else {}))
    anon = Calls(seeded.client, {"X-Svc-Site": shared_site.site})
    await anon.err(method, path, 401, "UNAUTHENTICATED", **({"json": body} if body is not None else {}))
