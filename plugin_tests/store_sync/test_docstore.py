"""The docstore target against a local Firestore and OAuth server: the JWT-bearer grant with an
assertion the server verifies with the service account's public key, the ``documents:commit``
body with typed values, token reuse and renewal, deletes, the role's read mask, failures
retried in order, and the outbound rule at connect time."""

from __future__ import annotations

from .store_sync_helpers import (
    CLIENT_EMAIL,
    PIPES,
    PROJECT,
    env_for,
    grant_public_read,
    log_of,
    service_account,
    until,
)

PREFIX = f"projects/{PROJECT}/databases/(default)/documents/"


async def pipeline(calls, google, **extra):
    body = {"name": "fs", "target": "docstore", "credentials": service_account(google), "collections": ["posts"],
            **extra}
    return await calls.ok("post", PIPES, status=201, json=body)


async def posts(calls, **fields):
    await calls.collection("posts", {"title": "string", "views": "integer", "score": "float", "published": "boolean",
                                     "meta": "json", **fields})
    await grant_public_read(calls, "posts")


async def test_create_update_delete_reach_firestore(calls, google):
    await posts(calls)
    made = await pipeline(calls, google, targetPath="cms/{collection}/entries/{id}")
    item = await calls.create("posts", {"title": "Hello", "views": 3, "score": 1.5, "published": True,
                                        "meta": {"tags": ["a", "b"], "nested": {"n": None}}})
    doc = f"cms/posts/entries/{item['id']}"
    await until(lambda: doc in google.documents)
    fields = google.documents[doc]
    assert fields["title"] == {"stringValue": "Hello"}
    assert fields["views"] == {"integerValue": "3"}
    assert fields["score"] == {"doubleValue": 1.5}
    assert fields["published"] == {"booleanValue": True}
    assert fields["id"] == {"stringValue": item["id"]}
    assert fields["meta"] == {"mapValue": {"fields": {
        "tags": {"arrayValue": {"values": [{"stringValue": "a"}, {"stringValue": "b"}]}},
        "nested": {"mapValue": {"fields": {"n": {"nullValue": None}}}}}}}
    # The grant: a JWT-bearer assertion signed with the service account's key (verified by the
    # server with its public key), for the datastore scope.
    assert len(google.grants) == 1
    claims = google.grants[0]
    assert claims["iss"] == claims["sub"] == CLIENT_EMAIL and claims["aud"] == google.url("/token")
    await calls.ok("patch", f"/items/posts/{item['id']}", json={"title": "Changed"})
    await until(lambda: google.documents.get(doc, {}).get("title") == {"stringValue": "Changed"})
    await calls.ok("delete", f"/items/posts/{item['id']}", status=204)
    await until(lambda: doc not in google.documents)
    assert google.commits[-1] == {"writes": [{"delete": PREFIX + doc}]}
    assert len(google.grants) == 1  # the token is reused until it expires
    detail = await calls.ok("get", f"{PIPES}/{made['id']}")
    assert detail["lastSyncAt"] is not None and detail["lastSyncItemCount"] == 1 and detail["lastError"] is None


async def test_flags_and_collections_filter(calls, google):
    await posts(calls)
    await calls.collection("other", {"title": "string"})
    await grant_public_read(calls, "other")
    await pipeline(calls, google, syncOnUpdate=False, syncOnDelete=False)
    item = await calls.create("posts", {"title": "one"})
    await calls.create("other", {"title": "not synced"})
    await until(lambda: f"posts/{item['id']}" in google.documents)
    await calls.ok("patch", f"/items/posts/{item['id']}", json={"title": "two"})
    await calls.ok("delete", f"/items/posts/{item['id']}", status=204)
    marker = await calls.create("posts", {"title": "marker"})
    await until(lambda: f"posts/{marker['id']}" in google.documents)
    assert google.documents[f"posts/{item['id']}"]["title"] == {"stringValue": "one"}
    assert not any(k.startswith("other/") for k in google.documents)
    # A collection added later is synced from its next event on.
    made = (await calls.ok("get", PIPES))[0]
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"collections": ["posts", "other"]})
    added = await calls.create("other", {"title": "synced now"})
    await until(lambda: f"other/{added['id']}" in google.documents)


async def test_the_role_reads_no_more_than_it_may(calls, google):
    """The public role reads only published posts, and only their title: that is what reaches
    the store; a post that leaves the role's view is deleted there."""
    await calls.collection("posts", {"title": "string", "secret": "string"})
    await grant_public_read(calls, "posts", fields=["id", "title", "status"],
                            conditions={"status": {"_eq": "published"}})
    made = await pipeline(calls, google)
    draft = await calls.create("posts", {"title": "draft", "secret": "s1", "status": "draft"})
    shown = await calls.create("posts", {"title": "shown", "secret": "s2", "status": "published"})
    await until(lambda: f"posts/{shown['id']}" in google.documents)
    assert set(google.documents[f"posts/{shown['id']}"]) == {"id", "title", "status"}
    assert f"posts/{draft['id']}" not in google.documents
    await calls.ok("patch", f"/items/posts/{shown['id']}", json={"status": "draft"})
    await until(lambda: f"posts/{shown['id']}" not in google.documents)
    assert "s1" not in str(google.commits) and "s2" not in str(google.commits)
    # A collection the role may not read at all is skipped, never pushed.
    await calls.collection("hidden", {"title": "string"})
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"collections": ["posts", "hidden"],
                                                          "targetPath": "{collection}"})
    await calls.create("hidden", {"title": "x"})
    log = await log_of(calls, made["id"], lambda entries: any(e["skipped"] for e in entries))
    assert log[0]["status"] == "ok" and log[0]["pushed"] == 0
    assert not any(k.startswith("hidden/") for k in google.documents)


async def test_failures_are_retried_in_order_and_logged(calls, google):
    await posts(calls)
    made = await pipeline(calls, google)
    google.fail_next = 2
    item = await calls.create("posts", {"title": "v1"})
    await calls.ok("patch", f"/items/posts/{item['id']}", json={"title": "v2"})
    log = await log_of(calls, made["id"], lambda entries: any(e["status"] == "ok" for e in entries))
    assert [e["status"] for e in reversed(log)][:2] == ["failed", "failed"]
    assert "HTTP 503" in log[-1]["error"] and log[-1]["attempt"] == 1 and log[-2]["attempt"] == 2
    assert google.documents[f"posts/{item['id']}"]["title"] == {"stringValue": "v2"}
    titles = [w["update"]["fields"]["title"]["stringValue"] for c in google.commits for w in c["writes"]]
    assert titles[-1] == "v2" and "v1" not in titles[titles.index("v2"):]


async def test_a_refused_token_is_renewed(calls, google):
    await posts(calls)
    await pipeline(calls, google)
    first = await calls.create("posts", {"title": "a"})
    await until(lambda: f"posts/{first['id']}" in google.documents)
    google.tokens.clear()  # the server forgets every token: the next commit answers 401
    second = await calls.create("posts", {"title": "b"})
    await until(lambda: f"posts/{second['id']}" in google.documents)
    assert len(google.grants) == 2


async def test_a_bad_grant_is_a_logged_failure(calls, google):
    """A key the token endpoint does not know (another service account's) is refused there."""
    from .store_sync_helpers import OTHER_PEM

    await posts(calls)
    made = await pipeline(calls, google)
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"credentials": service_account(google,
                                                                                          private_key=OTHER_PEM)})
    await calls.create("posts", {"title": "a"})
    log = await log_of(calls, made["id"], lambda entries: bool(entries))
    assert log[0]["status"] == "failed" and "token endpoint answered HTTP 400" in log[0]["error"]
    assert not google.grants and not google.commits
    detail = await calls.ok("get", f"{PIPES}/{made['id']}")
    assert "token endpoint" in detail["lastError"]


async def test_loopback_is_refused_without_the_allow_list(make_app, google):
    env = {**env_for(google), "SVC_OUTBOUND_ALLOW_NETWORKS": ""}
    app = await make_app(env=env)
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    resp = await app.client.post(f"/api/v1{PIPES}", headers=headers, json={
        "name": "fs", "target": "docstore", "credentials": service_account(google), "collections": ["posts"]})
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_ERROR" and error["path"] == ["credentials", "token_uri"]
    for url in ("http://0.0.0.0/token", "http://169.254.169.254/token", "http://[::ffff:127.0.0.1]/token",
                "file:///etc/passwd"):
        resp = await app.client.post(f"/api/v1{PIPES}", headers=headers, json={
            "name": "fs", "target": "docstore", "credentials": service_account(google, token_uri=url),
            "collections": ["posts"]})
        assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_ERROR", url


async def test_a_name_that_resolves_to_loopback_is_refused_at_connect_time(make_app, google):
    """``localhost`` passes the save-time check (it is a name), and is refused when connecting."""
    env = {**env_for(google), "SVC_OUTBOUND_ALLOW_NETWORKS": "10.99.0.0/16"}
    app = await make_app(env=env)
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    from kernel.testing import Calls

    calls = Calls(app.client, headers)
    await posts(calls)
    made = await pipeline(calls, google, credentials=service_account(
        google, token_uri=f"http://localhost:{google.port}/token"))
    await calls.create("posts", {"title": "a"})
    log = await log_of(calls, made["id"], lambda entries: bool(entries))
    assert "refused address" in log[0]["error"]
    assert not google.requests


async def test_a_hostile_token_endpoint_is_a_failure(calls, google):
    """A token that would inject a header, or an answer of several megabytes, is refused."""
    await posts(calls)
    made = await pipeline(calls, google)
    google.token_answer = {"access_token": "ya29.x\r\nX-Injected: 1", "expires_in": 3600}
    await calls.create("posts", {"title": "a"})
    log = await log_of(calls, made["id"], lambda entries: bool(entries))
    assert "no access_token" in log[0]["error"]
    google.token_answer = {"access_token": "t" * 10, "padding": "p" * (2 << 20)}
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"status": "active"})
    log = await log_of(calls, made["id"], lambda entries: any("more than" in (e["error"] or "") for e in entries))
    assert not google.commits
