"""The caller is checked before the body (issue 35, item 3), generated from the OpenAPI document.

Every operation of the default app's document (every plugin installed) that declares a security
requirement is called without a credential, with path parameters filled with plausible values,
the site header of a real site, and a body that is not even JSON: each must answer 401
``UNAUTHENTICATED`` (contract.md, "Auth details"), never the 400 of the body it did not look at.
Public operations are the ones whose document says ``security: []``; none is listed here by hand.
One app for the module, one request per operation, nothing written.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from kernel.http.routing import Route
from kernel.testing import API

METHODS = ("get", "post", "put", "patch", "delete")
BAD_BODY = b'{"not json": '  # no parser would take it: a 400 here means the body was read first
PLAUSIBLE = {"id": "0190f4a6-7b1e-7c2d-8e3f-4a5b6c7d8e9f", "key": "a.jpg", "collection": "articles",
             "name": "articles", "field": "title", "version": "1", "token": "t" * 32}


def plausible(name: str) -> str:
    """A value a client could send for the path parameter ``name`` (an id, a key, a name)."""
    if name in PLAUSIBLE:
        return PLAUSIBLE[name]
    if name.lower().endswith("id"):
        return PLAUSIBLE["id"]
    return "sample"


def protected_operations(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) of every operation whose document asks for a credential: a non-empty
    ``security`` without the empty requirement ``{}`` (which makes a credential optional, as on
    ``/metrics`` without a scrape token)."""
    found = []
    for path, item in doc["paths"].items():
        for method in METHODS:
            op = item.get(method)
            requirements = None if op is None else op.get("security", doc.get("security", []))
            if requirements and all(requirements):
                found.append((method, path))
    return found


@pytest.mark.asyncio(loop_scope="module")
async def test_no_credential_is_refused_before_the_body(shared_site):
    client = shared_site.app.client
    doc = (await client.get(f"{API}/openapi.json")).json()
    operations = protected_operations(doc)
    public = sum(1 for item in doc["paths"].values() for m in METHODS if m in item) - len(operations)
    # The split is by declared security: both halves exist, so the filter itself can fail.
    assert len(operations) > 100 and public > 10, (len(operations), public)
    wrong = []
    for method, path in operations:
        url = re.sub(r"{(\w+)}", lambda m: plausible(m.group(1)), path)
        headers = {"X-Svc-Site": shared_site.site, "Content-Type": "application/json"}
        body = BAD_BODY if method in ("post", "put", "patch") else None
        resp = await client.request(method.upper(), url, content=body, headers=headers)
        code = resp.json()["errors"][0]["code"] if resp.headers.get("content-type", "").startswith(
            "application/json") and resp.status_code >= 400 else None
        if (resp.status_code, code) != (401, "UNAUTHENTICATED"):
            wrong.append(f"{method.upper()} {path}: {resp.status_code} {code or resp.text[:120]}")
    assert wrong == [], "\n".join(wrong)


@pytest.mark.asyncio(loop_scope="module")
async def test_declared_permissions_are_in_the_document(shared_site):
    doc = (await shared_site.app.client.get(f"{API}/openapi.json")).json()
    declared = {(m, p): op["x-svc-permission"] for p, item in doc["paths"].items()
                for m, op in item.items() if m in METHODS and "x-svc-permission" in op}
    assert declared[("post", f"{API}/files")] == "media:create"
    assert declared[("post", f"{API}/flows/{{id}}/run")] == "flows:run"
    assert ("get", f"{API}/files") not in declared  # by method: reading declares none


def test_a_route_permission_is_by_method_and_needs_a_site():
    route = Route("/x", object(), permission={"POST": "media:create", "*": "media:read"})
    assert (route.permission_for("post"), route.permission_for("GET")) == ("media:create", "media:read")
    assert Route("/y", object()).permission_for("POST") is None
    with pytest.raises(ValueError, match="a permission is held in a site"):
        Route("/z", object(), site="none", permission="media:create")
