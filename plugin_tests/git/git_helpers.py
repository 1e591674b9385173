"""Git test helpers: local servers speaking the used part of GitHub's and GitLab's REST APIs and
OAuth endpoints (on ``http_receiver``), checking the token and bodies they receive, and signed
webhook deliveries."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from typing import Any
from urllib.parse import parse_qs

from sqlalchemy import select

from kernel.policy.audit import audit_log
from kernel.testing import Calls

KEY = base64.b64encode(b"g" * 32).decode()
TOKEN = "ghp_test_token_123"
GL_TOKEN = "glpat-test-token-456"
SHA = "a" * 40
CLIENT_SECRET = "client-secret-xyz"
PUBLIC_URL = "https://cms.example.com"


def env_for(receiver: Any) -> dict[str, str]:
    base = receiver.url("")
    return {"SVC_ENCRYPTION_KEY": KEY, "SVC_GIT_GITHUB_API_URL": base, "SVC_GIT_GITHUB_URL": base,
            "SVC_GIT_GITLAB_URL": base + "/gl", "SVC_GIT_GITHUB_CLIENT_ID": "gh-client",
            "SVC_GIT_GITHUB_CLIENT_SECRET": CLIENT_SECRET, "SVC_GIT_GITLAB_CLIENT_ID": "gl-client",
            "SVC_GIT_GITLAB_CLIENT_SECRET": CLIENT_SECRET, "SVC_PUBLIC_URL": PUBLIC_URL,
            "SVC_GIT_LOG_MAX_BYTES": "2048"}


async def git_app(make_app: Any, receiver: Any, **env: str) -> tuple[Any, Calls, str]:
    """A started app whose providers are ``receiver``, with a fresh site; (app, admin calls, site)."""
    app = await make_app(env={**env_for(receiver), **env})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    return app, Calls(app.client, {**admin, "X-Svc-Site": site}), site


async def connect(calls: Calls, provider: str = "github", repo: str = "acme/site", token: str | None = TOKEN,
                  **extra: Any) -> dict[str, Any]:
    body = {"provider": provider, "repoFullName": repo, "displayName": "Site repo", "authMethod": "pat", **extra}
    if token is not None:
        body["token"] = token
    return await calls.ok("post", "/integrations/git", status=201, json=body)


def json_answer(document: Any, status: int = 200, **headers: str) -> tuple[int, bytes, dict[str, str]]:
    return status, json.dumps(document).encode(), dict(headers)


def authorized(request: Any, token: str) -> bool:
    return request.headers.get("Authorization") == f"Bearer {token}"


def guarded(token: str, document: Any, status: int = 200) -> Any:
    """A responder answering ``document`` only to ``Authorization: Bearer <token>`` (401 otherwise)."""
    def answer(request: Any) -> tuple[int, bytes, dict[str, str]]:
        if not authorized(request, token):
            return json_answer({"message": "Bad credentials"}, 401)
        return json_answer(document, status)
    return answer


def github_pull(number: int, sha: str = SHA, state: str = "open", merged: bool = False) -> dict[str, Any]:
    return {"number": number, "title": f"PR {number}", "state": state, "merged_at": "2026-01-01T00:00:00Z"
            if merged else None, "head": {"sha": sha, "ref": f"feature-{number}"}, "base": {"ref": "main"},
            "user": {"login": "octo"}, "html_url": f"https://github.example/acme/site/pull/{number}"}


def serve_github_pulls(receiver: Any, pulls: list[dict[str, Any]], token: str = TOKEN, repo: str = "acme/site") -> str:
    path = f"/repos/{repo}/pulls?state=all&sort=updated&direction=desc&per_page=50"
    receiver.respond(path, guarded(token, pulls))
    return path


def serve_github_file(receiver: Any, content: bytes | None, sha: str = SHA, token: str = TOKEN,
                      repo: str = "acme/site") -> str:
    path = f"/repos/{repo}/contents/svc/manifest.json?ref={sha}"
    if content is None:
        receiver.respond(path, guarded(token, {"message": "Not Found"}, 404))
    else:
        receiver.respond(path, guarded(token, {"type": "file", "encoding": "base64",
                                               "content": base64.b64encode(content).decode()}))
    return path


def record_status(receiver: Any, path: str, token: str, status: int = 201) -> list[dict[str, Any]]:
    """Accept commit statuses POSTed to ``path`` with ``token``; the bodies land in the returned list."""
    got: list[dict[str, Any]] = []

    def answer(request: Any) -> tuple[int, bytes, dict[str, str]]:
        if request.method != "POST" or not authorized(request, token):
            return json_answer({"message": "Bad credentials"}, 401)
        got.append(json.loads(request.body))
        return json_answer({"id": 1}, status)
    receiver.respond(path, answer)
    return got


def oauth_token_endpoint(receiver: Any, path: str, client_id: str, code: str, granted: str,
                         grant_type: bool = False) -> list[dict[str, list[str]]]:
    """A provider token endpoint: checks the form (client, secret, code, redirect URI) and grants ``granted``."""
    seen: list[dict[str, list[str]]] = []

    def answer(request: Any) -> tuple[int, bytes, dict[str, str]]:
        form = parse_qs(request.body.decode())
        seen.append(form)
        ok = (request.method == "POST" and form.get("client_id") == [client_id]
              and form.get("client_secret") == [CLIENT_SECRET] and form.get("code") == [code]
              and (form.get("redirect_uri") or [""])[0].startswith(PUBLIC_URL + "/api/v1/integrations/git/oauth/")
              and (not grant_type or form.get("grant_type") == ["authorization_code"]))
        if not ok:
            return json_answer({"error": "bad_verification_code"}, 400)
        return json_answer({"access_token": granted, "token_type": "bearer", "scope": "repo"})
    receiver.respond(path, answer)
    return seen


def github_signature(secret: str, raw: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


async def github_hook(client: Any, site: str, integration_id: str, secret: str, event: str, payload: Any,
                      delivery: str | None = None, signature: str | None = None,
                      provider: str = "github") -> Any:
    raw = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
               "X-Hub-Signature-256": signature if signature is not None else github_signature(secret, raw),
               "Content-Type": "application/json"}
    return await client.post(f"/api/v1/integrations/git/webhook/{provider}/{site}/{integration_id}",
                             content=raw, headers=headers)


async def gitlab_hook(client: Any, site: str, integration_id: str, token: str, event: str, payload: Any,
                      delivery: str | None = None) -> Any:
    headers = {"X-Gitlab-Event": event, "X-Gitlab-Event-UUID": delivery or str(uuid.uuid4()),
               "X-Gitlab-Token": token, "Content-Type": "application/json"}
    return await client.post(f"/api/v1/integrations/git/webhook/gitlab/{site}/{integration_id}",
                             json=payload, headers=headers)


async def audits(app: Any, site: str, action: str) -> list[Any]:
    async with app.kernel.db.engine.connect() as conn:
        return list((await conn.execute(select(audit_log).where(audit_log.c.site_id == site,
                                                               audit_log.c.action == action))).mappings())
