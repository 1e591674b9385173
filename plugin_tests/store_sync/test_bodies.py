"""Bad bodies: every key of a create and a patch body, the credentials of each target and the
``targetPath`` template; 400 ``VALIDATION_ERROR`` with the path, never a 500."""

from __future__ import annotations

import pytest

from .store_sync_helpers import OTHER_PEM, PIPES, service_account

SA = service_account()
RT = {"databaseUrl": "https://demo-default-rtdb.firebaseio.com", "secret": "s3cret"}


def docstore(**extra):
    return {"name": "fs", "target": "docstore", "credentials": SA, "collections": ["posts"], **extra}


def rtdb(**extra):
    return {"name": "rt", "target": "rtdb", "credentials": RT, "collections": ["posts"], **extra}


def without(mapping, key):
    return {k: v for k, v in mapping.items() if k != key}


BAD = [
    ([], ["body"]), ("x", ["body"]), (7, ["body"]),
    (docstore(extra=1), ["extra"]), (without(docstore(), "name"), ["name"]), (docstore(name=""), ["name"]),
    (docstore(name="x" * 101), ["name"]), (docstore(name="bad\nname"), ["name"]), (docstore(name=5), ["name"]),
    (docstore(target="mongo"), ["target"]), (without(docstore(), "target"), ["target"]),
    (without(docstore(), "credentials"), ["credentials"]), (docstore(credentials="json"), ["credentials"]),
    (docstore(credentials=[SA]), ["credentials"]),
    (docstore(credentials=without(SA, "project_id")), ["credentials", "project_id"]),
    (docstore(credentials={**SA, "project_id": "Bad_Project"}), ["credentials", "project_id"]),
    (docstore(credentials=without(SA, "client_email")), ["credentials", "client_email"]),
    (docstore(credentials={**SA, "client_email": "nobody"}), ["credentials", "client_email"]),
    (docstore(credentials=without(SA, "private_key")), ["credentials", "private_key"]),
    (docstore(credentials={**SA, "private_key": "not a key"}), ["credentials", "private_key"]),
    (docstore(credentials={**SA, "private_key": OTHER_PEM[:200]}), ["credentials", "private_key"]),
    (docstore(credentials={**SA, "private_key": 7}), ["credentials", "private_key"]),
    (docstore(credentials={**SA, "private_key_id": ["k"]}), ["credentials", "private_key_id"]),
    (docstore(credentials={**SA, "token_uri": "ftp://example.com/token"}), ["credentials", "token_uri"]),
    (docstore(credentials={**SA, "token_uri": "http://192.168.1.5/token"}), ["credentials", "token_uri"]),
    (docstore(credentials={**SA, "token_uri": "http://10.0.0.5/token"}), ["credentials", "token_uri"]),
    (docstore(credentials={**SA, "token_uri": "http://user:pw@example.com/token"}), ["credentials", "token_uri"]),
    (docstore(credentials={**SA, "universe": {"a": 1}}), ["credentials", "universe"]),
    (docstore(credentials=RT), ["credentials", "project_id"]),
    (rtdb(credentials=SA), ["credentials", "client_email"]), (docstore(name="trailing\n"), ["name"]),
    (rtdb(credentials=without(RT, "databaseUrl")), ["credentials", "databaseUrl"]),
    (rtdb(credentials={**RT, "databaseUrl": "https://x.firebaseio.com/?ns=a"}), ["credentials", "databaseUrl"]),
    (rtdb(credentials={**RT, "databaseUrl": "https://x.firebaseio.com/#f"}), ["credentials", "databaseUrl"]),
    (rtdb(credentials={**RT, "databaseUrl": "http://0.0.0.0/"}), ["credentials", "databaseUrl"]),
    (rtdb(credentials={**RT, "databaseUrl": "http://[fc00::1]/"}), ["credentials", "databaseUrl"]),
    (rtdb(credentials={**RT, "databaseUrl": "http://169.254.169.254/"}), ["credentials", "databaseUrl"]),
    (rtdb(credentials={**RT, "databaseUrl": "javascript:alert(1)"}), ["credentials", "databaseUrl"]),
    (rtdb(credentials=without(RT, "secret")), ["credentials", "secret"]),
    (rtdb(credentials={**RT, "secret": ""}), ["credentials", "secret"]),
    (rtdb(credentials={**RT, "secret": "a b"}), ["credentials", "secret"]),
    (rtdb(credentials={**RT, "secret": "s" * 513}), ["credentials", "secret"]),
    (rtdb(credentials={**RT, "extra": 1}), ["credentials", "extra"]),
    (docstore(projectId="X"), ["projectId"]), (docstore(projectId=5), ["projectId"]),
    (without(docstore(), "collections"), ["collections"]), (docstore(collections=[]), ["collections"]),
    (docstore(collections="posts"), ["collections"]), (docstore(collections=["bad name"]), ["collections", "0"]),
    (docstore(collections=[1]), ["collections", "0"]), (docstore(collections=["a"] * 51), ["collections"]),
    (docstore(targetPath=""), ["targetPath"]), (docstore(targetPath=5), ["targetPath"]),
    (docstore(targetPath="a//{collection}"), ["targetPath"]), (docstore(targetPath="/{collection}"), ["targetPath"]),
    (docstore(targetPath="{collection}/../x"), ["targetPath"]), (docstore(targetPath="{name}"), ["targetPath"]),
    (docstore(targetPath="{collection}/{id}/{id}"), ["targetPath"]),
    (docstore(targetPath="{id}/{collection}"), ["targetPath"]),
    (docstore(targetPath="a/{collection}"), ["targetPath"]),  # docstore: odd segment count with the id
    (docstore(targetPath="{collection}/{id}/sub"), ["targetPath"]),
    (docstore(targetPath="x" * 301), ["targetPath"]), (docstore(targetPath="a.b"), ["targetPath"]),
    (docstore(collections=["posts", "pages"], targetPath="all"), ["targetPath"]),
    (rtdb(targetPath="a/$b"), ["targetPath"]), (rtdb(targetPath="a/{collection}?x=1"), ["targetPath"]),
    (docstore(syncOnCreate="yes"), ["syncOnCreate"]), (docstore(syncOnUpdate=1), ["syncOnUpdate"]),
    (docstore(syncOnDelete=None), ["syncOnDelete"]), (docstore(role=5), ["role"]), (docstore(role=""), ["role"]),
    (docstore(role="r" * 37), ["role"]), (docstore(status="active"), ["status"]),
]


@pytest.mark.parametrize("body, path", BAD)
async def test_bad_create_bodies(shared_site, body, path):
    await shared_site.calls.err("post", PIPES, 400, "VALIDATION_ERROR", path, json=body)


async def test_not_json_and_unknown_ids(shared_site):
    calls = shared_site.calls
    for raw in (b"{nope", b"", b"\xff"):
        await calls.err("post", PIPES, 400, "VALIDATION_FAILED", content=raw,
                        headers={"Content-Type": "application/json"})
    await calls.err("post", PIPES, 400, "VALIDATION_ERROR", ["body"], content=b"null",
                    headers={"Content-Type": "application/json"})
    for path in (f"{PIPES}/nope", f"{PIPES}/{'x' * 40}", f"{PIPES}/nope/log"):
        await calls.err("get", path, 404, "RECORD_NOT_FOUND")
    await calls.err("patch", f"{PIPES}/nope", 404, "RECORD_NOT_FOUND", json={"name": "x"})
    await calls.err("delete", f"{PIPES}/nope", 404, "RECORD_NOT_FOUND")
    await calls.err("get", f"{PIPES}/nope/log", 400, "VALIDATION_FAILED", params={"limit": "0"})


async def test_a_valid_body_without_the_key_is_encryption_key_required(shared_site):
    """The shared app has no SVC_ENCRYPTION_KEY: a body that passes every check cannot be stored."""
    for body in (docstore(), rtdb(targetPath="m/{collection}/{id}")):
        await shared_site.calls.err("post", PIPES, 400, "ENCRYPTION_KEY_REQUIRED", json=body)
    assert await shared_site.calls.ok("get", PIPES) == []


async def test_bad_patch_bodies(calls, google):
    made = await calls.ok("post", PIPES, status=201, json=docstore(credentials=service_account(google),
                                                                   collections=["posts", "pages"],
                                                                   targetPath="{collection}/{id}"))
    one = f"{PIPES}/{made['id']}"
    cases = [
        ([], ["body"]), ({"extra": 1}, ["extra"]), ({"target": "rtdb"}, ["target"]), ({"name": ""}, ["name"]),
        ({"status": "dead"}, ["status"]), ({"status": None}, ["status"]), ({"collections": []}, ["collections"]),
        ({"collections": ["posts", "pages", "x"], "targetPath": "all/x"}, ["targetPath"]),
        ({"targetPath": "a/{collection}/{id}"}, ["targetPath"]),  # odd: not a document path
        ({"targetPath": "static/{id}"}, ["targetPath"]),  # two collections need {collection}
        ({"credentials": None}, ["credentials"]), ({"credentials": RT}, ["credentials", "project_id"]),
        ({"credentials": {**SA, "token_uri": "http://192.168.1.1/t"}}, ["credentials", "token_uri"]),
        ({"role": "no-such-role"}, ["role"]), ({"syncOnCreate": "no"}, ["syncOnCreate"]),
    ]
    for body, path in cases:
        await calls.err("patch", one, 400, "VALIDATION_ERROR", path, json=body)
    await calls.err("patch", one, 400, "VALIDATION_FAILED", content=b"{",
                    headers={"Content-Type": "application/json"})
    detail = await calls.ok("get", one)
    assert {k: detail[k] for k in ("name", "status", "collections", "targetPath")} == {
        "name": "fs", "status": "active", "collections": ["posts", "pages"], "targetPath": "{collection}/{id}"}
