"""A NUL (``%00``) in a path parameter, on every operation of the OpenAPI document that has one:
never a 5xx, always the error envelope. PostgreSQL refuses a NUL in text, so each route that bound
such a parameter without checking it answered 500 there (57 operations: files, folders, presets,
releases, sites, flows, agents, cdc, email...); the kernel now hands the responder U+FFFD in its
place (``kernel.http.middleware.storable_path_params``), which names nothing, and each route
answers its own 404 or 400. Run on both dialects; the PostgreSQL pass is the one that found it."""

from __future__ import annotations

import re

import pytest

from kernel.http.middleware import storable_path_params
from kernel.testing import API

PARAM = re.compile(r"\{[^}]+\}")


def test_a_nul_in_a_path_parameter_becomes_fffd_in_place():
    params = {"id": "a\x00b", "n": 3, "key": "plain"}
    storable_path_params(params)
    assert params == {"id": "a\ufffdb", "n": 3, "key": "plain"}


@pytest.mark.asyncio(loop_scope="module")
async def test_no_operation_answers_a_nul_path_parameter_with_a_5xx(shared_site):
    doc = (await shared_site.app.client.get(f"{API}/openapi.json", headers=shared_site.admin_headers)).json()
    called, problems = 0, []
    for path, operations in doc["paths"].items():
        if "{" not in path:
            continue
        for method in ("get", "post", "put", "patch", "delete"):
            if method not in operations:
                continue
            concrete = PARAM.sub("a%00b", path.removeprefix(API))
            resp = await shared_site.calls.call(method, concrete, **({"json": {}} if method != "get" else {}))
            called += 1
            if resp.status_code >= 500 or (resp.status_code >= 400 and "errors" not in resp.json()):
                problems.append(f"{method.upper()} {path}: {resp.status_code} {resp.text[:120]}")
    assert called > 150 and problems == []
    # A write naming what it creates by its path is refused as before, not stored with U+FFFD.
    for method, path in (("put", "/files/upload/a%00b.txt"), ("post", "/media/a%00b.txt")):
        resp = await shared_site.calls.call(method, path, content=b"hello", headers={"Content-Type": "text/plain"})
        assert (resp.status_code, resp.json()["errors"][0]["path"]) == (400, ["key"]), resp.text
