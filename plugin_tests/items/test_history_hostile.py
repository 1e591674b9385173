"""Hostile input on every history route: wrong types, odd ids, deep nesting, big bodies. The
answer is always a 4xx in the error envelope, never a 500."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

BODIES = [None, 0, "x", [], [1, 2], {}, {"data": None}, {"data": {"title": ["x"]}}, {"key": {"a": 1}},
          {"revisionId": ["a"]}, {"field": None}, {"fields": [None]}, {"expiresAt": {}}, {"name": True},
          {"\u0000": 1}, {"data": {"\u00e9\u0000": 1}}, {"key": "\u00e9"}, {"staged": None, "data": {}},
          {"data": {"n": -(2**63)}}]
# Not encodable by a JSON client, but a raw body can carry them (Python's parser reads them).
RAW = [b"{", b"\xff\xfe", b"[" * 10_000 + b"]" * 10_000, b'{"data": ' * 5_000, b'{"data": {"n": 1e309}}',
       b'{"data": {"meta": NaN}}', b'{"data": {"meta": [Infinity]}}', b'{"key": "v", "name": -Infinity}']
PATH_IDS = ["%00", "..", "a%2Fb", "x" * 300, "%F0%9F%98%80", "-", "0"]


async def _setup(calls: Calls) -> None:
    await calls.collection("notes", {"title": "string", "n": "integer", "meta": "json"}, versioning=True)
    await calls.create("notes", {"id": "a", "title": "t"})
    await calls.ok("post", "/items/notes/a/versions", status=201, json={"key": "v"})


def _routes(item: str = "a", sub: str = "v") -> list[tuple[str, str]]:
    base = f"/items/notes/{item}"
    return [("get", f"{base}/revisions"), ("post", f"{base}/revisions"), ("get", f"{base}/revisions/{sub}"),
            ("post", f"{base}/revisions/{sub}/commit"), ("post", f"{base}/revert"), ("get", f"{base}/versions"),
            ("post", f"{base}/versions"), ("get", f"{base}/versions/{sub}"), ("patch", f"{base}/versions/{sub}"),
            ("delete", f"{base}/versions/{sub}"), ("get", f"{base}/versions/{sub}/compare"),
            ("post", f"{base}/versions/{sub}/promote"), ("get", f"{base}/pins"), ("post", f"{base}/pins"),
            ("get", f"{base}/pins/{sub}"), ("delete", f"{base}/pins/{sub}")]


def _is_client_error(resp) -> None:
    assert 400 <= resp.status_code < 500, (resp.request.method, resp.request.url, resp.status_code, resp.text)
    if resp.status_code != 204:
        assert resp.json()["errors"][0]["code"]


async def test_wrong_bodies_never_500(calls: Calls):
    await _setup(calls)
    for method, path in _routes():
        if method not in ("post", "patch"):
            continue
        for body in BODIES:
            resp = await calls.call(method, path, json=body)
            if resp.status_code < 300:
                continue  # some shapes are valid for some routes (an empty promote, say)
            _is_client_error(resp)
        for raw in RAW:
            _is_client_error(await calls.call(method, path, content=raw,
                                              headers={"Content-Type": "application/json"}))


async def test_odd_path_ids_never_500(calls: Calls):
    await _setup(calls)
    for odd in PATH_IDS:
        for method, path in _routes(item=odd) + _routes(sub=odd):
            kw = {"json": {}} if method in ("post", "patch") else {}
            resp = await calls.call(method, path, **kw)
            if resp.status_code >= 300:  # the routes without the odd segment may answer
                _is_client_error(resp)


async def test_oversized_body_is_413(svc_app, calls: Calls):
    await _setup(calls)
    limit = svc_app.kernel.settings.max_body_bytes
    resp = await calls.call("patch", "/items/notes/a/versions/v", content=b'{"data": {"title": "' + b"x" * limit
                            + b'"}}', headers={"Content-Type": "application/json"})
    assert resp.status_code == 413 and resp.json()["errors"][0]["code"] == "PAYLOAD_TOO_LARGE"


async def test_deep_json_in_a_version_is_a_client_error(calls: Calls):
    await calls.collection("docs", {"meta": "json"}, versioning=True)
    await calls.create("docs", {"id": "d"})
    await calls.ok("post", "/items/docs/d/versions", status=201, json={"key": "v"})
    deep: dict = {}
    node = deep
    for _ in range(200):
        node["x"] = {}
        node = node["x"]
    resp = await calls.call("patch", "/items/docs/d/versions/v", json={"data": {"meta": deep}})
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["data", "meta"], resp.text
    resp = await calls.call("post", "/items/docs/d/revisions", json={"data": {"meta": deep}})
    assert resp.status_code == 400, resp.text
