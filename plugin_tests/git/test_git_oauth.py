"""OAuth: authorize mints a fresh single-use state and ignores redirect parameters; the public
callback exchanges the code at the provider's token endpoint (checked there) and refuses reuse."""

from urllib.parse import parse_qs, urlsplit

from git_helpers import CLIENT_SECRET, PUBLIC_URL, connect, git_app, guarded, oauth_token_endpoint


async def _authorize(calls, integration_id, **params):
    answer = await calls.ok("get", f"/integrations/git/{integration_id}/oauth/authorize", params=params)
    assert set(answer) == {"authorizeUrl"}
    url = urlsplit(answer["authorizeUrl"])
    return url, {k: v[0] for k, v in parse_qs(url.query).items()}


async def test_github_oauth_round_trip(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, token=None)
    url, query = await _authorize(calls, made["id"], redirect_uri="https://evil.example/steal")
    assert url.path == "/login/oauth/authorize" and query["client_id"] == "gh-client"
    assert query["redirect_uri"] == f"{PUBLIC_URL}/api/v1/integrations/git/oauth/github/callback"
    assert "evil" not in url.geturl() and CLIENT_SECRET not in url.geturl()
    _, again = await _authorize(calls, made["id"])
    assert again["state"] != query["state"]
    seen = oauth_token_endpoint(http_receiver, "/login/oauth/access_token", "gh-client", "the-code", "gho_granted")
    resp = await app.client.get("/api/v1/integrations/git/oauth/github/callback",
                                params={"code": "the-code", "state": query["state"]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == {"integrationId": made["id"], "connected": True}
    assert resp.headers["cache-control"] == "no-store"
    assert len(seen) == 1 and seen[0]["redirect_uri"] == [query["redirect_uri"]]
    assert (await calls.ok("get", f"/integrations/git/{made['id']}"))["hasToken"] is True
    # the granted token is the one used on the provider's API
    http_receiver.respond("/repos/acme/site/pulls?state=all&sort=updated&direction=desc&per_page=50",
                          guarded("gho_granted", []))
    assert await calls.ok("post", f"/integrations/git/{made['id']}/pull-requests/refresh") == {"fetched": 0}
    # reuse of the state is refused, before any exchange
    reuse = await app.client.get("/api/v1/integrations/git/oauth/github/callback",
                                 params={"code": "the-code", "state": query["state"]})
    assert reuse.status_code == 400 and reuse.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    assert len(seen) == 1


async def test_gitlab_oauth_and_state_bound_to_provider(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, provider="gitlab", repo="group/site", token=None)
    url, query = await _authorize(calls, made["id"])
    assert url.path == "/gl/oauth/authorize" and query["response_type"] == "code"
    seen = oauth_token_endpoint(http_receiver, "/gl/oauth/token", "gl-client", "c0de", "gl-granted", grant_type=True)
    wrong = await app.client.get("/api/v1/integrations/git/oauth/github/callback",
                                 params={"code": "c0de", "state": query["state"]})
    assert wrong.status_code == 400 and seen == []
    # the state was for gitlab: the github callback refused it without an exchange; a fresh one works
    _, query = await _authorize(calls, made["id"])
    ok = await app.client.get("/api/v1/integrations/git/oauth/gitlab/callback",
                              params={"code": "c0de", "state": query["state"]})
    assert ok.status_code == 200, ok.text
    assert len(seen) == 1


async def test_callback_refusals(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, token=None)
    _, query = await _authorize(calls, made["id"])
    base = "/api/v1/integrations/git/oauth/github/callback"
    for params in [{}, {"code": "x"}, {"code": "x", "state": "short"}, {"code": "x", "state": "y" * 40},
                   {"code": "x", "state": "y" * 500}, {"state": query["state"]},
                   {"code": "a b", "state": query["state"]}]:
        resp = await app.client.get(base, params=params)
        assert resp.status_code == 400, params
        assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    assert (await app.client.get("/api/v1/integrations/git/oauth/bitbucket/callback",
                                 params={"code": "x", "state": query["state"]})).status_code == 404
    # a code the provider refuses is 502, and the state is spent
    oauth_token_endpoint(http_receiver, "/login/oauth/access_token", "gh-client", "good", "tok")
    resp = await app.client.get(base, params={"code": "bad", "state": query["state"]})
    assert resp.status_code == 502 and resp.json()["errors"][0]["code"] == "GIT_PROVIDER_ERROR"
    assert (await app.client.get(base, params={"code": "good", "state": query["state"]})).status_code == 400
    assert (await calls.ok("get", f"/integrations/git/{made['id']}"))["hasToken"] is False


async def test_a_deleted_integration_state_is_gone(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, token=None)
    _, query = await _authorize(calls, made["id"])
    await calls.ok("delete", f"/integrations/git/{made['id']}", status=204)
    resp = await app.client.get("/api/v1/integrations/git/oauth/github/callback",
                                params={"code": "c", "state": query["state"]})
    assert resp.status_code == 400


async def test_oauth_not_configured(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver, SVC_GIT_GITHUB_CLIENT_ID="")
    made = await connect(calls, token=None)
    await calls.err("get", f"/integrations/git/{made['id']}/oauth/authorize", 400, "GIT_OAUTH_NOT_CONFIGURED")
