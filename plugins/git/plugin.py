"""Hook implementations of the git plugin (its table of contents)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base.settings import parse_float, parse_int
from plugins.git import hookspecs, previews, routes, schemas, webhooks

name = "git"
# agents (GitOps intents, CI incidents) answers git's own hooks (hookspecs.py): not required.
requires = ("access", "items", "schema")


def parse_base_url(raw: str) -> str:
    """A provider base URL: ``http(s)``, a host, no credentials, query or fragment."""
    value = raw.strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password \
            or parts.query or parts.fragment:
        raise ValueError("must be an http(s) base URL such as https://api.github.com")
    return value


@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(hookspecs)


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_GIT_GITHUB_API_URL", "https://api.github.com", parse_base_url,
                "Base URL of GitHub's REST API (GitHub Enterprise: https://<host>/api/v3)."),
        Setting("SVC_GIT_GITHUB_URL", "https://github.com", parse_base_url,
                "Base URL of GitHub's web host, for OAuth (/login/oauth/authorize, /login/oauth/access_token)."),
        Setting("SVC_GIT_GITLAB_URL", "https://gitlab.com", parse_base_url,
                "Base URL of the GitLab instance: its REST API (/api/v4) and OAuth (/oauth/authorize, /oauth/token)."),
        Setting("SVC_GIT_GITHUB_CLIENT_ID", "", str, "OAuth app client id for GitHub (empty: no GitHub OAuth)."),
        Setting("SVC_GIT_GITHUB_CLIENT_SECRET", "", str, "OAuth app client secret for GitHub.", secret=True),
        Setting("SVC_GIT_GITLAB_CLIENT_ID", "", str, "OAuth application id for GitLab (empty: no GitLab OAuth)."),
        Setting("SVC_GIT_GITLAB_CLIENT_SECRET", "", str, "OAuth application secret for GitLab.", secret=True),
        Setting("SVC_GIT_GITHUB_APP_ID", "", str,
                "The GitHub App's id: integrations with authMethod 'app' get installation tokens minted "
                "with it (empty: they use the token they were given)."),
        Setting("SVC_GIT_GITHUB_APP_PRIVATE_KEY", "", str,
                "The GitHub App's private key (PEM; '\\n' may stand for the line breaks).", secret=True),
        Setting("SVC_GIT_TIMEOUT", 15.0, parse_float(0.1, 120), "Seconds to wait for a git provider's answer."),
        Setting("SVC_RATE_LIMIT_GIT_PUBLIC", 600, parse_int(0),
                "Requests per minute per client IP to the public git routes (webhook receiver, OAuth callback); "
                "0 disables."),
        Setting("SVC_GIT_LOG_MAX_BYTES", 1024 * 1024, parse_int(1024),
                "Most bytes of a CI log fetched and kept (a longer log is cut, `truncated: true`)."),
    ]


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    return {"git_public": RateBucket("rate_limit_git_public", 60.0, "ip")}


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.task(previews.JOB, previews.preview_job, retries=3, retry_delay=30, retry_max_delay=600, owner="git")
    jobs.task(webhooks.INCIDENT_JOB, webhooks.incident_job, retries=5, retry_delay=30, retry_max_delay=3600,
              owner="git")
    jobs.periodic(previews.SWEEP_JOB, previews.sweep_job, cron="23 * * * *", owner="git")


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {
        "GIT_PROVIDER_ERROR": (502, "The git provider could not be reached or refused the request."),
        "GIT_NOT_CONNECTED": (409, "The git integration has no token yet (set one, or connect with OAuth)."),
        "GIT_OAUTH_NOT_CONFIGURED": (400, "OAuth for this git provider has no client id configured."),
    }


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    base = "/integrations/git"
    one = base + "/{id}"
    return [
        Route(base, routes.IntegrationsResource(), auth="admin", openapi=ops(
            get=("List the site's git integrations", None, [schemas.INTEGRATION], 200),
            post=("Connect a repository (token sealed; the webhook secret answered once)", schemas.CREATE_BODY,
                  schemas.INTEGRATION, 201))),
        Route(one, routes.IntegrationResource(), auth="admin", openapi=ops(
            get=("A git integration", None, schemas.INTEGRATION, 200),
            patch=("Change display name, token, status or sync config", schemas.PATCH_BODY, schemas.INTEGRATION,
                   200),
            delete=("Disconnect: forget the token, the secret and the cache", None, None, 204))),
        Route(one + "/rotate-secret", routes.RotateSecretResource(), auth="admin", openapi=ops(
            post=("A new webhook secret, answered once as { secret }", None, schemas.SECRET, 200))),
        Route(one + "/oauth/authorize", routes.AuthorizeResource(), auth="admin", openapi=ops(
            get=("The provider's authorize URL with a fresh single-use state", None, schemas.AUTHORIZE, 200))),
        Route(one + "/pull-requests", routes.PullsResource(), auth="admin", openapi=ops(
            get=("Cached pull requests", None, [schemas.PULL], 200))),
        Route(one + "/pull-requests/refresh", routes.RefreshResource(), auth="admin", openapi=ops(
            post=("Pull the recent pull requests live from the provider", None, schemas.REFRESH, 200))),
        Route(one + "/pull-requests/{number}/ci", routes.RunsResource(), auth="admin", openapi=ops(
            get=("CI runs of the pull request's head (fetched and cached)", None, [schemas.RUN], 200))),
        Route(one + "/pull-requests/{number}/validate", routes.ValidateResource(), auth="admin", openapi=ops(
            post=("Dry-run the PR's svc/manifest.json; post the commit status svc/content-validation", None,
                  schemas.VALIDATION, 200))),
        Route(one + "/ci-runs/{run_id}/logs", routes.LogResource(), auth="admin", openapi=ops(
            get=("A CI run's log, fetched once, cut at SVC_GIT_LOG_MAX_BYTES and cached", None, schemas.LOG, 200))),
        Route(one + "/gitops/sync", routes.GitopsResource(), auth="admin", openapi=ops(
            post=("Reconcile svc/intents.json into agent intents, with a drift scan", schemas.GITOPS_BODY,
                  schemas.GITOPS, 200))),
        Route(one + "/provenance", routes.ProvenanceResource(), auth="admin", openapi=ops(
            get=("Which commit or PR changed an item (its writes' git causes)", None, [schemas.PROVENANCE], 200))),
        Route(base + "/oauth/{provider}/callback", routes.CallbackResource(), site="none", auth="public",
              authenticate=False, rate_limit="git_public",
              openapi=ops(get=("OAuth callback: exchange the code, bound to the state", None, schemas.CALLBACK, 200))),
        Route(base + "/webhook/{provider}/{site_id}/{integration_id}", routes.WebhookResource(), site="none",
              auth="public", authenticate=False, rate_limit="git_public", openapi=ops(
                  post=("Webhook receiver (GitHub HMAC signature, GitLab token); idempotent by delivery id", None,
                        schemas.RECEIVED, 200))),
    ]


@hookimpl
def register_sealed_columns(kernel: Any) -> list[Any]:
    """Where this plugin keeps sealed secrets (the git host token and the webhook secret): checked at start (kernel/sealed.py)."""
    from plugins.git.tables import integrations

    return [integrations.c.token, integrations.c.webhook_secret]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``gitCiRuns``: CI run logs quoting the subject."""
    from kernel.policy.privacy import rows_target
    from plugins.git.tables import ci_runs

    return [rows_target("gitCiRuns", ci_runs, [ci_runs.c.log], "CI run logs quoting the subject.")]
