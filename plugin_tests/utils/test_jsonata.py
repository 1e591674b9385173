"""POST /api/v1/utils/jsonata/test: results as JSON, errors as 400, hostile input stopped in time.
The cases only evaluate, so they share the module's apps: one whose short time limit stops the
hostile cases quickly, one whose long limit keeps the ordinary cases' answers off the machine's load
(under a loaded whole run, "nothing.here" once missed the short limit's 0.9 s and answered 400)."""

from __future__ import annotations

import pytest

from kernel.testing import shared as testing_shared

JSONATA = "/api/v1/utils/jsonata/test"
TIMEOUT_MS = 400
ROOMY_TIMEOUT_MS = 10_000


# One app for the hostile cases (stopped quickly), one for the ordinary cases (a limit no evaluation
# of theirs comes near, loaded or not); every case only evaluates, nothing is written.
shared = testing_shared.shared_site_started_with(jsonata_timeout_ms=TIMEOUT_MS)
roomy = testing_shared.shared_site_started_with(jsonata_timeout_ms=ROOMY_TIMEOUT_MS)


@pytest.fixture
def app(shared):
    return shared.app


@pytest.fixture
def headers(shared):
    return shared.admin_headers


@pytest.fixture
def ordinary(roomy):
    return roomy.app, roomy.admin_headers


async def evaluate(app, headers, expression, **body):
    return await app.client.post(JSONATA, json={"expression": expression, **body}, headers=headers)


async def test_result(ordinary):
    app, headers = ordinary
    resp = await evaluate(app, headers, "$sum(order.items.price) * 2", data={"order": {"items": [{"price": 2},
                                                                                                  {"price": 3}]}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"data": {"result": 10}}


async def test_sequences_and_objects_become_json(ordinary):
    app, headers = ordinary
    resp = await evaluate(app, headers, '{"range": [1..3], "names": items.name, "s": $string(1.5)}',
                          data={"items": [{"name": "a"}, {"name": "b"}]})
    assert resp.json()["data"]["result"] == {"range": [1, 2, 3], "names": ["a", "b"], "s": "1.5"}


async def test_undefined_is_null_and_data_is_optional(ordinary):
    app, headers = ordinary
    resp = await evaluate(app, headers, "nothing.here")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"data": {"result": None}}


async def test_syntax_error(ordinary):
    app, headers = ordinary
    resp = await evaluate(app, headers, "1 +")
    assert resp.status_code == 400
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED" and error["path"] == ["expression"]
    assert error["message"].startswith("Syntax error: ")
    assert error["extensions"]["jsonataCode"].startswith("S0")


async def test_runtime_error(ordinary):
    app, headers = ordinary
    resp = await evaluate(app, headers, '"x" + 1')
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["extensions"]["jsonataCode"] == "T2001"


@pytest.mark.parametrize(("expression", "reasons"), [
    ("$sum([1..10000000])", {"timeout"}),  # one builtin call: the library's own timeout never looks
    ('$match("' + "a" * 40 + 'b", /(a+)+$/)', {"timeout"}),  # catastrophic backtracking inside re
    # unbounded recursion: the library's timeout or its stack bound, whichever it meets first
    ("($f := function($n){ $f($n + 1) }; $f(0))", {"timeout", "depth"}),
])
async def test_hostile_expressions_are_stopped_by_a_bound(app, headers, expression, reasons):
    # The child's CPU limit (its rlimit) is above the wall deadline, so the deadline stops these:
    # the answer names the bound that stopped it, not a wall-clock measurement of the test.
    resp = await evaluate(app, headers, expression)
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["path"] == ["expression"]
    assert error["extensions"]["reason"] in reasons, error


async def test_timeout_message(app, headers):
    resp = await evaluate(app, headers, "$sum([1..10000000])")
    error = resp.json()["errors"][0]
    assert error["message"] == f"The expression did not finish within {TIMEOUT_MS} ms"
    assert error["extensions"]["reason"] == "timeout"


async def test_huge_allocation_is_refused(app, headers):
    resp = await evaluate(app, headers, '$pad("x", 400000000)')
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["extensions"]["reason"] in ("memory", "limit", "timeout")


@pytest.mark.parametrize("body, path", [
    ({}, ["expression"]),
    ({"expression": 1}, ["expression"]),
    ({"expression": "x" * 10_001}, ["expression"]),
    ({"expression": "1", "other": 1}, ["other"]),
])
async def test_bad_bodies(app, headers, body, path):
    resp = await app.client.post(JSONATA, json=body, headers=headers)
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["path"] == path


async def test_needs_a_bearer(app):
    resp = await app.client.post(JSONATA, json={"expression": "1"})
    assert resp.status_code == 401
