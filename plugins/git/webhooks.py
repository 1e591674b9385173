"""The public webhook receiver ``POST /integrations/git/webhook/{provider}/{siteId}/{integrationId}``.

Verification comes first, over the raw body, in constant time: GitHub's ``X-Hub-Signature-256:
sha256=<hex HMAC-SHA256 of the body with the webhook secret>``, GitLab's ``X-Gitlab-Token: <the
secret>``. An unknown site, an unknown integration, an integration of another provider or of
another site, and a bad signature all get the same 401 ``UNAUTHENTICATED`` (the same work is
done: a stranger cannot tell which). Only then is the body read as JSON. A delivery id
(``X-GitHub-Delivery``, ``X-Gitlab-Event-UUID``) is recorded in the same transaction as what
the event does, so a replay does nothing twice.

Events used: GitHub ``ping``, ``pull_request``, ``check_run``; GitLab ``Merge Request Hook``,
``Job Hook``. Others are acknowledged and ignored. A failed CI run writes the ``git_ci_failed``
audit entry and queues the job ``git.incident`` (the ``git_ci_failed`` hook: an incident of role
``git-sync`` in the agents plugin's trust ledger), both in the delivery's transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.auth.principal import ANONYMOUS
from kernel.base.jsoncodec import nul_path
from kernel.db.meta import now_utc
from kernel.hooks.plugins import call_all
from kernel.policy import audit
from kernel.tenancy.service import get_site_cached
from plugins.git import integrations as ig
from plugins.git import previews, providers
from plugins.git.pulls import upsert_pull, upsert_run
from plugins.git.tables import deliveries, integrations, pull_requests
from plugins.items import api as items_api

MAX_ID = 64
INCIDENT_ROLE = "git-sync"
INCIDENT_JOB = "git.incident"
FAILED = ("failure", "timed_out", "startup_failure")
_DECOY = b"svc-git-webhook-decoy-secret"


def refused() -> ApiError:
    return ApiError(401, "UNAUTHENTICATED", "The webhook is not signed for this integration")


def _signature_ok(provider: str, secret: bytes, raw: bytes, headers: dict[str, str]) -> bool:
    if provider == "github":
        sent = headers.get("x-hub-signature-256", "")
        expected = "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
        return hmac.compare_digest(sent.encode("utf-8", "replace"), expected.encode())
    sent = headers.get("x-gitlab-token", "")
    return hmac.compare_digest(sent.encode("utf-8", "replace"), secret)


def _header(headers: dict[str, str], name: str, limit: int, *, spaces: bool = False) -> str:
    value = headers.get(name, "")
    lowest = 32 if spaces else 33
    if not value.strip() or len(value) > limit or any(ord(c) < lowest or ord(c) > 126 for c in value):
        raise ApiError.validation(f"The {name} header is required (at most {limit} printable characters)",
                                  path=["headers", name])
    return value


async def _integration(kernel: Any, provider: str, site_id: str, integration_id: str) -> Any:
    if provider not in providers.PROVIDERS or not 0 < len(site_id) <= MAX_ID or not 0 < len(integration_id) <= MAX_ID \
            or not integration_id.isascii() or not integration_id.isprintable():
        return None
    if await get_site_cached(kernel, site_id) is None:
        return None
    async with kernel.unit_of_work(site_id) as uow:
        row = await uow.db.one(uow.db.select(integrations).where(integrations.c.id == integration_id))
    return row if row is not None and row["provider"] == provider else None


async def receive(ctx: Any, provider: str, site_id: str, integration_id: str, headers: dict[str, str],
                  raw: bytes) -> dict[str, Any]:
    kernel = ctx.kernel
    row = await _integration(kernel, provider, site_id, integration_id)
    secret = ig.open_secret(kernel, row).encode() if row is not None else _DECOY
    verified = _signature_ok(provider if provider in providers.PROVIDERS else "github", secret, raw, headers)
    if row is None or not verified:
        raise refused()
    if provider == "github":
        delivery = _header(headers, "x-github-delivery", 100)
        event = _header(headers, "x-github-event", 60)
    else:
        delivery = _header(headers, "x-gitlab-event-uuid", 100)
        event = _header(headers, "x-gitlab-event", 60, spaces=True)  # "Merge Request Hook"
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        raise ApiError.validation("The body is not valid JSON", path=["body"]) from None
    if not isinstance(payload, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    where = nul_path(payload)
    if where is not None:  # read_json's rule: PostgreSQL stores a NUL in neither text nor JSONB
        raise ApiError.validation("A string holds a NUL character (\\u0000), which cannot be stored",
                                  path=["body", *where])
    stage = "delivery"
    try:
        async with kernel.unit_of_work(site_id) as uow:
            seen = await uow.db.one(uow.db.select(deliveries, deliveries.c.delivery_id).where(
                deliveries.c.integration_id == integration_id, deliveries.c.delivery_id == delivery))
            if seen is not None:
                return {"received": True, "duplicate": True, "event": event}
            await uow.db.insert(deliveries, {"integration_id": integration_id, "delivery_id": delivery,
                                             "event": event, "received_at": now_utc()})
            stage = "handle"
            handled = "ignored" if row["status"] != "active" else \
                await _handle(uow, row, provider, event, payload)
    except IntegrityError:
        if stage != "delivery":
            raise  # not a replay: fail, so the provider delivers it again
        return {"received": True, "duplicate": True, "event": event}  # the same delivery, concurrently
    return {"received": True, "duplicate": False, "event": event, "handled": handled}


async def _handle(uow: Any, row: Any, provider: str, event: str, payload: dict[str, Any]) -> str:
    if provider == "github":
        if event == "ping":
            return "ping"
        if event == "pull_request" and isinstance(payload.get("pull_request"), dict):
            return await _github_pull(uow, row, payload)
        if event == "check_run" and isinstance(payload.get("check_run"), dict):
            return await _github_check(uow, row, payload["check_run"])
        return "ignored"
    if event == "Merge Request Hook" and isinstance(payload.get("object_attributes"), dict):
        return await _gitlab_merge_request(uow, row, payload)
    if event == "Job Hook":
        return await _gitlab_job(uow, row, payload)
    return "ignored"


async def _pull(uow: Any, row: Any, pull: dict[str, Any], action: str, path: list[str | int]) -> str:
    """Upsert a pull request from a webhook and queue its preview work."""
    if not isinstance(pull["number"], int) or isinstance(pull["number"], bool):
        raise ApiError.validation("The pull request's number must be an integer", path=path)
    await upsert_pull(uow.db, row["id"], pull)
    await previews.queue(uow, row, pull["number"], action, _sha(pull["head_sha"]))
    return "pull_request"


async def _github_pull(uow: Any, row: Any, payload: dict[str, Any]) -> str:
    p = payload["pull_request"]
    action = payload.get("action") if isinstance(payload.get("action"), str) else ""
    return await _pull(uow, row, providers.github_pull(p), "closed" if p.get("state") == "closed" else action,
                       ["body", "pull_request", "number"])


async def _gitlab_merge_request(uow: Any, row: Any, payload: dict[str, Any]) -> str:
    m = payload["object_attributes"]
    action = m.get("action") if isinstance(m.get("action"), str) else ""
    pull = providers.gitlab_merge_request(m, (m.get("last_commit") or {}).get("id"),
                                          (payload.get("user") or {}).get("username"), m.get("url"))
    return await _pull(uow, row, pull, "close" if m.get("state") in ("closed", "merged") else action,
                       ["body", "object_attributes", "iid"])


def _sha(value: Any) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 64 or not value.isalnum():
        raise ApiError.validation("The pull request's head commit must be a commit id", path=["body"])
    return value


async def _number_for(uow: Any, integration_id: str, sha: str, listed: Any) -> int:
    """The PR a CI run belongs to: the one the payload names, else the cached PR with that head, else 0."""
    if isinstance(listed, list):
        for entry in listed:
            if isinstance(entry, dict) and isinstance(entry.get("number"), int):
                return int(entry["number"])
    found = await uow.db.one(uow.db.select(pull_requests, pull_requests.c.number).where(
        pull_requests.c.integration_id == integration_id, pull_requests.c.head_sha == sha))
    return int(found["number"]) if found is not None else 0


async def _github_check(uow: Any, row: Any, check: dict[str, Any]) -> str:
    run = providers.normal_run(check.get("id"), check.get("name"), check.get("status"), check.get("conclusion"),
                               check.get("head_sha"), check.get("html_url"))
    if not run["run_id"]:
        raise ApiError.validation("check_run.id is required", path=["body", "check_run", "id"])
    number = await _number_for(uow, row["id"], run["head_sha"], check.get("pull_requests"))
    await upsert_run(uow.db, row["id"], number, run)
    if run["status"] == "completed" and run["conclusion"] in FAILED:
        await ci_failed(uow, row, number, run)
        return "ci_failed"
    return "check_run"


async def _gitlab_job(uow: Any, row: Any, payload: dict[str, Any]) -> str:
    run = providers.gitlab_job(payload.get("build_id"), payload.get("build_name"), payload.get("build_status"),
                               payload.get("sha"), None)
    if not run["run_id"]:
        raise ApiError.validation("build_id is required", path=["body", "build_id"])
    number = await _number_for(uow, row["id"], run["head_sha"], None)
    await upsert_run(uow.db, row["id"], number, run)
    if run["conclusion"] == "failure":
        await ci_failed(uow, row, number, run)
        return "ci_failed"
    return "job"


async def incident_job(kernel: Any, site_id: str, detail: dict[str, Any]) -> None:
    """Job ``git.incident``: tell ``git_ci_failed`` (the agents plugin records an incident of role
    ``git-sync`` in its trust ledger)."""
    ctx = items_api.context(kernel, site_id, ANONYMOUS, request_id=f"git-delivery-{detail.get('runId')}")
    await call_all(kernel.pm.hook.git_ci_failed, ctx=ctx, role=INCIDENT_ROLE, detail=detail)


async def ci_failed(uow: Any, row: Any, number: int, run: dict[str, Any]) -> None:
    """A failed CI run: the ``git_ci_failed`` audit entry, and the incident job, both in the
    delivery's transaction (a replay does neither again; the job is retried until recorded)."""
    await audit.record(uow.conn, action="git_ci_failed", site_id=row["site_id"], target_type="git_integration",
                       target_id=row["id"], details={"provider": row["provider"], "number": number,
                                                     "runId": run["run_id"], "name": run["name"],
                                                     "sha": run["head_sha"], "conclusion": run["conclusion"]})
    await uow.kernel.jobs.enqueue(INCIDENT_JOB, uow=uow, site_id=row["site_id"], detail={
        "integrationId": row["id"], "provider": row["provider"], "number": number, "runId": run["run_id"],
        "name": run["name"], "sha": run["head_sha"], "conclusion": run["conclusion"]})
