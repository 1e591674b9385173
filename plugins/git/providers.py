"""The parts of GitHub's and GitLab's REST APIs and OAuth endpoints the git plugin speaks.

Every request goes through the pooled client ``git`` (kernel.base.outbound): the host is resolved and
checked at connect time by the outbound rule (the git hosts are the operator's settings, but an
internal one needs its network in ``SVC_OUTBOUND_ALLOW_NETWORKS``), redirects are not followed
(one redirect of a GitHub job log is followed by hand, to a checked URL and without the token),
each answer is read up to a byte cap. Base URLs are settings (``SVC_GIT_GITHUB_API_URL``, ``SVC_GIT_GITHUB_URL``,
``SVC_GIT_GITLAB_URL``), so a test points them at its own server.

GitHub: ``GET /repos/{repo}/pulls``, ``GET /repos/{repo}/commits/{sha}/check-runs``,
``GET /repos/{repo}/actions/jobs/{id}/logs``, ``GET /repos/{repo}/contents/{path}?ref=``,
``POST /repos/{repo}/statuses/{sha}``; OAuth ``/login/oauth/authorize`` and
``/login/oauth/access_token``. GitLab (``/api/v4``): ``GET /projects/{id}/merge_requests``,
``GET /projects/{id}/merge_requests/{iid}/pipelines``, ``GET /projects/{id}/pipelines/{p}/jobs``,
``GET /projects/{id}/jobs/{id}/trace``, ``GET /projects/{id}/repository/files/{path}/raw?ref=``,
``POST /projects/{id}/statuses/{sha}``; OAuth ``/oauth/authorize`` and ``/oauth/token``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urljoin

import jwt

from kernel.base import outbound
from kernel.base.errors import ApiError

if TYPE_CHECKING:
    import httpx

PROVIDERS = ("github", "gitlab")
STATUS_CONTEXT = "svc/content-validation"
MAX_ANSWER = 4 * 1024 * 1024  # a JSON answer larger than this is refused
USER_AGENT = "svc-git-integration"


class ProviderError(Exception):
    """The provider could not be reached or answered something unusable; the message is safe to show."""


def upstream(exc: ProviderError) -> ApiError:
    return ApiError(502, "GIT_PROVIDER_ERROR", str(exc))


@dataclass
class Answer:
    status: int
    body: bytes
    truncated: bool
    headers: httpx.Headers

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            raise ProviderError("The provider answered something that is not JSON") from None


def _client(kernel: Any) -> httpx.AsyncClient:
    import httpx

    timeout = httpx.Timeout(kernel.settings.get("git_timeout"), connect=5.0)
    return outbound.client(kernel, "git", timeout=timeout, max_connections=20)


async def request(kernel: Any, method: str, url: str, *, token: str | None = None, cap: int = MAX_ANSWER,
                  headers: dict[str, str] | None = None, json_body: Any = None, form: dict[str, str] | None = None,
                  auth_scheme: str = "Bearer") -> Answer:
    """One request to a provider URL, answer read up to ``cap`` bytes."""
    import httpx

    sent = {"User-Agent": USER_AGENT, **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"{auth_scheme} {token}"
    content: bytes | None = None
    if json_body is not None:
        content, sent["Content-Type"] = json.dumps(json_body).encode(), "application/json"
    elif form is not None:
        content, sent["Content-Type"] = urlencode(form).encode(), "application/x-www-form-urlencoded"
    try:
        req = _client(kernel).build_request(method, url, headers=sent, content=content)
        resp = await _client(kernel).send(req, stream=True)
        try:
            chunks, total, truncated = [], 0, False
            async for chunk in resp.aiter_bytes():
                room = cap - total
                if len(chunk) > room:
                    chunks.append(chunk[:room])
                    truncated = True
                    break
                chunks.append(chunk)
                total += len(chunk)
        finally:
            await resp.aclose()
    except outbound.OutboundRefused as exc:
        raise ProviderError(f"The provider URL is refused: {exc}") from None
    except httpx.HTTPError as exc:
        raise ProviderError(f"The provider could not be reached ({type(exc).__name__})") from None
    return Answer(resp.status_code, b"".join(chunks), truncated, resp.headers)


# ---------------------------------------------------------------- GitHub App installation tokens

APP_TOKENS = "git.app_tokens"  # kernel.state: {installation id: (token, its expiry in epoch seconds)}


def app_configured(kernel: Any) -> bool:
    return bool(kernel.settings.get("git_github_app_id") and kernel.settings.get("git_github_app_private_key"))


def app_jwt(kernel: Any, now: float | None = None) -> str:
    """The GitHub App's own JWT (RS256, issued by the app id, 9 minutes, backdated 60 s for clock
    drift), which only serves to mint installation tokens."""
    now = int(time.time() if now is None else now)
    key = kernel.settings.get("git_github_app_private_key").replace("\\n", "\n")
    try:
        return jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(kernel.settings.get("git_github_app_id"))},
                          key, algorithm="RS256")
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        raise ProviderError(f"SVC_GIT_GITHUB_APP_PRIVATE_KEY is not a usable RSA private key "
                            f"({type(exc).__name__})") from None


async def app_installation_token(kernel: Any, installation_id: str) -> str:
    """An installation token of the GitHub App for ``installation_id``: ``POST
    /app/installations/:id/access_tokens`` with the app's JWT; kept in this process until a
    minute before it expires (GitHub's last an hour)."""
    cache: dict[str, tuple[str, float]] = kernel.state.setdefault(APP_TOKENS, {})
    held = cache.get(installation_id)
    if held is not None and held[1] - 60 > time.time():
        return held[0]
    url = kernel.settings.get("git_github_api_url") + f"/app/installations/{quote(installation_id, safe='')}/access_tokens"
    answer = _ok(await request(kernel, "POST", url, token=app_jwt(kernel), headers={
        "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}), "installation token")
    try:
        document = answer.json()
        token, expires = document["token"], document["expires_at"]
        until = dt.datetime.fromisoformat(str(expires).replace("Z", "+00:00")).timestamp()
    except (ValueError, KeyError, TypeError):
        raise ProviderError("The provider's installation token answer is not understood") from None
    if not isinstance(token, str) or not token or not token.isprintable() or len(token) > 1000:
        raise ProviderError("The provider's installation token answer is not understood")
    cache[installation_id] = (token, until)
    return token


def _ok(answer: Answer, what: str) -> Answer:
    if answer.status == 401 or answer.status == 403:
        raise ProviderError(f"The provider refused the integration's token ({what}: {answer.status})")
    if answer.status == 404:
        raise ProviderError(f"The provider does not know it ({what}: 404)")
    if not 200 <= answer.status < 300:
        raise ProviderError(f"The provider answered {answer.status} ({what})")
    if answer.truncated:
        raise ProviderError(f"The provider's answer is too large ({what})")
    return answer


def _str(value: Any, limit: int) -> str:
    """A provider's text, cut at ``limit``, without NUL (PostgreSQL text cannot hold it)."""
    return value.replace("\x00", "\ufffd")[:limit] if isinstance(value, str) else ""


@dataclass
class Repo:
    """An integration's repository on its provider, with the token to use (or None)."""

    kernel: Any
    provider: str
    full_name: str
    token: str | None

    # ---------------------------------------------------------------- URLs

    def _api(self, path: str) -> str:
        if self.provider == "github":
            return self.kernel.settings.get("git_github_api_url") + f"/repos/{self.full_name}{path}"
        project = quote(self.full_name, safe="")
        return self.kernel.settings.get("git_gitlab_url") + f"/api/v4/projects/{project}{path}"

    def _headers(self) -> dict[str, str]:
        if self.provider == "github":
            return {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        return {"Accept": "application/json"}

    async def _get(self, path: str, what: str, cap: int = MAX_ANSWER) -> Answer:
        return _ok(await request(self.kernel, "GET", self._api(path), token=self.token, headers=self._headers(),
                                 cap=cap), what)

    # ---------------------------------------------------------------- pull requests

    async def pull_requests(self, limit: int) -> list[dict[str, Any]]:
        """The most recently updated pull (merge) requests, open or not, as cache rows."""
        if self.provider == "github":
            found = (await self._get(f"/pulls?state=all&sort=updated&direction=desc&per_page={limit}",
                                     "pull requests")).json()
            rows = [github_pull(p) for p in found if isinstance(p, dict)] if isinstance(found, list) else None
        else:
            found = (await self._get(f"/merge_requests?state=all&order_by=updated_at&sort=desc&per_page={limit}",
                                     "merge requests")).json()
            rows = [gitlab_merge_request(m, m.get("sha"), (m.get("author") or {}).get("username"), m.get("web_url"))
                    for m in found if isinstance(m, dict)] if isinstance(found, list) else None
        if rows is None:
            raise ProviderError("The provider's pull-request list is not a list")
        return [normal_pull(r) for r in rows if isinstance(r["number"], int) and not isinstance(r["number"], bool)]

    # ---------------------------------------------------------------- CI

    async def ci_runs(self, number: int, head_sha: str) -> list[dict[str, Any]]:
        """The CI runs of a pull request's head: GitHub check runs, GitLab jobs of its latest pipeline."""
        if self.provider == "github":
            found = (await self._get(f"/commits/{quote(head_sha, safe='')}/check-runs?per_page=100",
                                     "check runs")).json()
            runs = found.get("check_runs") if isinstance(found, dict) else None
            if not isinstance(runs, list):
                raise ProviderError("The provider's check-run list is not a list")
            return [normal_run(r.get("id"), r.get("name"), r.get("status"), r.get("conclusion"),
                               r.get("head_sha") or head_sha, r.get("html_url")) for r in runs if isinstance(r, dict)]
        pipelines = (await self._get(f"/merge_requests/{number}/pipelines", "pipelines")).json()
        if not isinstance(pipelines, list):
            raise ProviderError("The provider's pipeline list is not a list")
        if not pipelines or not isinstance(pipelines[0], dict) or not isinstance(pipelines[0].get("id"), int):
            return []
        jobs = (await self._get(f"/pipelines/{pipelines[0]['id']}/jobs?per_page=100", "jobs")).json()
        if not isinstance(jobs, list):
            raise ProviderError("The provider's job list is not a list")
        out = []
        for job in jobs:
            if not isinstance(job, dict):
                continue
            out.append(gitlab_job(job.get("id"), job.get("name"), job.get("status"),
                                  (job.get("commit") or {}).get("id") or head_sha, job.get("web_url")))
        return out

    async def run_log(self, run_id: str, cap: int) -> tuple[str, bool]:
        """The log of one CI run (GitHub: the job's log; GitLab: the job's trace), cut at ``cap`` bytes."""
        if self.provider == "gitlab":
            answer = _ok(await request(self.kernel, "GET", self._api(f"/jobs/{run_id}/trace"), token=self.token,
                                       headers={"Accept": "text/plain"}, cap=cap + 1), "job trace")
        else:
            answer = await request(self.kernel, "GET", self._api(f"/actions/jobs/{run_id}/logs"), token=self.token,
                                   headers=self._headers(), cap=cap + 1)
            location = answer.headers.get("location")
            if answer.status in (301, 302, 303, 307, 308) and location:
                # GitHub answers with a short-lived signed URL on its storage: fetched once, checked
                # at connect time like any provider URL, and never sent the token.
                target = outbound.check_url(urljoin(self._api("/"), location), path=["location"])
                answer = await request(self.kernel, "GET", target, headers={"Accept": "text/plain"}, cap=cap + 1)
            answer = _ok(answer, "job log") if not answer.truncated else answer
            if not 200 <= answer.status < 300:
                raise ProviderError(f"The provider answered {answer.status} (job log)")
        body = answer.body
        truncated = answer.truncated or len(body) > cap
        return body[:cap].decode("utf-8", "replace").replace("\x00", "\ufffd"), truncated

    # ---------------------------------------------------------------- files and statuses

    async def file(self, path: str, ref: str) -> bytes | None:
        """A file of the repository at ``ref``, or None when it does not exist there."""
        if self.provider == "github":
            url = self._api(f"/contents/{quote(path)}?ref={quote(ref, safe='')}")
        else:
            url = self._api(f"/repository/files/{quote(path, safe='')}/raw?ref={quote(ref, safe='')}")
        answer = await request(self.kernel, "GET", url, token=self.token, headers=self._headers())
        if answer.status == 404:
            return None
        answer = _ok(answer, path)
        if self.provider == "gitlab":
            return answer.body
        found = answer.json()
        if not isinstance(found, dict) or found.get("encoding") != "base64" or not isinstance(found.get("content"), str):
            raise ProviderError(f"The provider's answer for {path} is not a base64 file")
        try:
            return base64.b64decode(found["content"])
        except ValueError:
            raise ProviderError(f"The provider's answer for {path} is not base64") from None

    async def post_status(self, sha: str, ok: bool, description: str, target_url: str | None = None) -> None:
        """Post the commit status ``svc/content-validation`` on ``sha``."""
        if self.provider == "github":
            body: dict[str, Any] = {"state": "success" if ok else "failure", "context": STATUS_CONTEXT,
                                    "description": description[:140]}
            if target_url:
                body["target_url"] = target_url
        else:
            body = {"state": "success" if ok else "failed", "name": STATUS_CONTEXT, "description": description[:140]}
            if target_url:
                body["target_url"] = target_url
        _ok(await request(self.kernel, "POST", self._api(f"/statuses/{quote(sha, safe='')}"), token=self.token,
                          headers=self._headers(), json_body=body), "commit status")


def github_pull(p: dict[str, Any]) -> dict[str, Any]:
    """A GitHub pull request (REST answer or webhook payload) as a cache row."""
    return {"number": p.get("number"), "title": p.get("title"),
            "state": "merged" if p.get("merged_at") else p.get("state"),
            "head_sha": (p.get("head") or {}).get("sha"), "head_ref": (p.get("head") or {}).get("ref"),
            "base_ref": (p.get("base") or {}).get("ref"), "author": (p.get("user") or {}).get("login"),
            "url": p.get("html_url")}


def gitlab_merge_request(m: dict[str, Any], sha: Any, author: Any, url: Any) -> dict[str, Any]:
    """A GitLab merge request (REST answer or webhook ``object_attributes``) as a cache row."""
    return {"number": m.get("iid"), "title": m.get("title"), "state": m.get("state"), "head_sha": sha,
            "head_ref": m.get("source_branch"), "base_ref": m.get("target_branch"), "author": author, "url": url}


def gitlab_job(job_id: Any, name: Any, status: Any, sha: Any, url: Any) -> dict[str, Any]:
    """A GitLab job as a CI run, its status mapped onto GitHub's status and conclusion."""
    done = status in ("success", "failed", "canceled", "skipped")
    conclusion = {"success": "success", "failed": "failure", "canceled": "cancelled",
                  "skipped": "skipped"}.get(status) if done else None
    return normal_run(job_id, name, "completed" if done else "in_progress", conclusion, sha, url)


def normal_pull(row: dict[str, Any]) -> dict[str, Any]:
    return {"number": row["number"], "title": _str(row.get("title"), 300), "state": _str(row.get("state"), 12),
            "head_sha": _str(row.get("head_sha"), 64), "head_ref": _str(row.get("head_ref"), 255),
            "base_ref": _str(row.get("base_ref"), 255), "author": _str(row.get("author"), 100) or None,
            "url": _str(row.get("url"), 500) or None}


def normal_run(run_id: Any, name: Any, status: Any, conclusion: Any, sha: Any, url: Any) -> dict[str, Any]:
    return {"run_id": str(run_id)[:40] if isinstance(run_id, (int, str)) and not isinstance(run_id, bool) else "",
            "name": _str(name, 200), "status": _str(status, 20), "conclusion": _str(conclusion, 20) or None,
            "head_sha": _str(sha, 64), "url": _str(url, 500) or None}


# -------------------------------------------------------------------------------- OAuth


def authorize_url(kernel: Any, provider: str, state: str) -> str:
    """The provider's authorize URL for ``state``; the redirect URI is always this API's callback."""
    client_id = kernel.settings.get(f"git_{provider}_client_id")
    if not client_id:
        raise ApiError(400, "GIT_OAUTH_NOT_CONFIGURED",
                       f"OAuth for {provider} is not configured (SVC_GIT_{provider.upper()}_CLIENT_ID)")
    query = {"client_id": client_id, "redirect_uri": callback_url(kernel, provider), "state": state}
    if provider == "github":
        return kernel.settings.get("git_github_url") + "/login/oauth/authorize?" + urlencode({**query, "scope": "repo"})
    return kernel.settings.get("git_gitlab_url") + "/oauth/authorize?" + urlencode(
        {**query, "response_type": "code", "scope": "api"})


def callback_url(kernel: Any, provider: str) -> str:
    return kernel.settings.get("public_url").rstrip("/") + f"/api/v1/integrations/git/oauth/{provider}/callback"


async def exchange_code(kernel: Any, provider: str, code: str) -> str:
    """Exchange an authorization ``code`` for an access token at the provider's token endpoint."""
    form = {"client_id": kernel.settings.get(f"git_{provider}_client_id"),
            "client_secret": kernel.settings.get(f"git_{provider}_client_secret"), "code": code,
            "redirect_uri": callback_url(kernel, provider)}
    if provider == "github":
        url = kernel.settings.get("git_github_url") + "/login/oauth/access_token"
    else:
        url, form["grant_type"] = kernel.settings.get("git_gitlab_url") + "/oauth/token", "authorization_code"
    found = _ok(await request(kernel, "POST", url, headers={"Accept": "application/json"}, form=form),
                "token exchange").json()
    token = found.get("access_token") if isinstance(found, dict) else None
    if not isinstance(token, str) or not token or len(token) > 1000 or any(ord(c) < 33 for c in token):
        raise ProviderError("The provider did not grant a usable token")
    return token
