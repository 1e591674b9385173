"""Cached pull requests and CI runs: listing, refreshing from the provider, CI logs, validation.

The cache rows are written by ``refresh`` (a live pull) and by webhooks (``webhooks.py``); the
list routes read only the cache. A CI log is fetched once, cut at ``SVC_GIT_LOG_MAX_BYTES`` and
kept with its run (``truncated`` says it was cut).
"""

from __future__ import annotations

import json
from typing import Any

from kernel import ApiError
from kernel.db.meta import dialect_insert, iso, now_utc
from kernel.messaging.bus import EventContext
from kernel.policy import audit
from plugins.git import integrations as ig
from plugins.git import providers
from plugins.git.tables import ci_runs, pull_requests
from plugins.schema import api as schema_api

REFRESH_LIMIT = 50
MANIFEST_PATH = "svc/manifest.json"
MAX_MANIFEST = 1024 * 1024


def pull_record(row: Any) -> dict[str, Any]:
    return {"number": row["number"], "title": row["title"], "state": row["state"], "headSha": row["head_sha"],
            "headRef": row["head_ref"], "baseRef": row["base_ref"], "author": row["author"], "url": row["url"],
            "fetchedAt": iso(row["fetched_at"])}


def run_record(row: Any) -> dict[str, Any]:
    return {"runId": row["run_id"], "number": row["number"], "name": row["name"], "status": row["status"],
            "conclusion": row["conclusion"], "headSha": row["head_sha"], "url": row["url"],
            "hasLog": row["log"] is not None, "fetchedAt": iso(row["fetched_at"])}


async def _upsert(db: Any, table: Any, key: tuple[str, ...], values: dict[str, Any], changing: list[str]) -> None:
    """One INSERT ... ON CONFLICT DO UPDATE of ``changing`` (a webhook and a refresh of the same
    pull request may race; neither fails)."""
    stmt = dialect_insert(db.conn.dialect.name)(table).values(site_id=db.site_id, **values)
    stmt = stmt.on_conflict_do_update(index_elements=[table.c[k] for k in key],
                                      set_={k: stmt.excluded[k] for k in changing})
    await db.conn.execute(stmt)


async def upsert_pull(db: Any, integration_id: str, pull: dict[str, Any]) -> None:
    values = {**providers.normal_pull(pull), "fetched_at": now_utc()}
    await _upsert(db, pull_requests, ("integration_id", "number"), {**values, "integration_id": integration_id},
                  [k for k in values if k != "number"])


async def upsert_run(db: Any, integration_id: str, number: int, run: dict[str, Any]) -> None:
    values = {**run, "number": number, "fetched_at": now_utc()}
    await _upsert(db, ci_runs, ("integration_id", "run_id"),
                  {**values, "integration_id": integration_id, "log": None, "log_truncated": False,
                   "log_fetched_at": None}, [k for k in values if k != "run_id"])


async def _pull_row(db: Any, integration_id: str, number: int) -> Any:
    row = await db.one(db.select(pull_requests).where(pull_requests.c.integration_id == integration_id,
                                                      pull_requests.c.number == number))
    if row is None:
        raise ApiError(404, "RECORD_NOT_FOUND", f"No pull request #{number} cached for this integration "
                       "(refresh first)")
    return row


async def list_pulls(ctx: Any, integration_id: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        await ig.row_of(db, integration_id)
        mine = pull_requests.c.integration_id == integration_id
        total = len(await db.all(db.select(pull_requests, pull_requests.c.number).where(mine)))
        rows = await db.all(db.select(pull_requests).where(mine).order_by(pull_requests.c.number.desc())
                            .limit(limit).offset(offset))
    return [pull_record(r) for r in rows], total


async def refresh(ctx: Any, integration_id: str) -> dict[str, Any]:
    """Pull the recent pull requests live from the provider and upsert them into the cache."""
    async with ctx.reader() as db:
        row = await ig.row_of(db, integration_id)
    repo = await ig.repo_of(ctx.kernel, row)
    try:
        found = await repo.pull_requests(REFRESH_LIMIT)
    except providers.ProviderError as exc:
        raise providers.upstream(exc) from None
    async with ctx.unit_of_work() as uow:
        await ig.row_of(uow.db, integration_id, lock=True)  # not deleted meanwhile
        for pull in found:
            await upsert_pull(uow.db, integration_id, pull)
    return {"fetched": len(found)}


async def list_runs(ctx: Any, integration_id: str, number: int) -> list[dict[str, Any]]:
    """The CI runs of a pull request's head, fetched live and cached; the cache when the provider fails."""
    async with ctx.reader() as db:
        row = await ig.row_of(db, integration_id)
        pull = await _pull_row(db, integration_id, number)
    repo = await ig.repo_of(ctx.kernel, row)
    try:
        found = await repo.ci_runs(number, pull["head_sha"])
    except providers.ProviderError as exc:
        raise providers.upstream(exc) from None
    async with ctx.unit_of_work() as uow:
        await ig.row_of(uow.db, integration_id, lock=True)
        for run in found:
            if run["run_id"]:
                await upsert_run(uow.db, integration_id, number, run)
        rows = await uow.db.all(uow.db.select(ci_runs).where(ci_runs.c.integration_id == integration_id,
                                                             ci_runs.c.number == number)
                                .order_by(ci_runs.c.run_id))
    return [run_record(r) for r in rows]


async def run_log(ctx: Any, integration_id: str, run_id: str) -> dict[str, Any]:
    """A CI run's log: from the cache, else fetched (cut at the size cap) and cached."""
    cap = ctx.kernel.settings.get("git_log_max_bytes")
    async with ctx.reader() as db:
        row = await ig.row_of(db, integration_id)
        run = await db.one(db.select(ci_runs).where(ci_runs.c.integration_id == integration_id,
                                                   ci_runs.c.run_id == run_id))
    if run is None:
        raise ApiError(404, "RECORD_NOT_FOUND", "No such CI run for this integration (list the pull request's "
                       "CI runs first)")
    if run["log"] is not None:
        return {"runId": run_id, "log": run["log"], "truncated": bool(run["log_truncated"]), "cached": True}
    try:
        text, truncated = await (await ig.repo_of(ctx.kernel, row)).run_log(run_id, cap)
    except providers.ProviderError as exc:
        raise providers.upstream(exc) from None
    async with ctx.unit_of_work() as uow:
        await uow.db.execute(uow.db.update(ci_runs).where(ci_runs.c.integration_id == integration_id,
                                                          ci_runs.c.run_id == run_id)
                             .values(log=text, log_truncated=truncated, log_fetched_at=now_utc()))
    return {"runId": run_id, "log": text, "truncated": truncated, "cached": False}


async def manifest_of(repo: providers.Repo, sha: str) -> tuple[Any, str | None]:
    """The PR's ``svc/manifest.json`` at ``sha``, parsed; (None, why) when missing or not JSON."""
    raw = await repo.file(MANIFEST_PATH, sha)
    if raw is None:
        return None, f"{MANIFEST_PATH} is not in the pull request"
    if len(raw) > MAX_MANIFEST:
        return None, f"{MANIFEST_PATH} is larger than {MAX_MANIFEST} bytes"
    try:
        return json.loads(raw), None
    except ValueError:
        return None, f"{MANIFEST_PATH} is not valid JSON"


async def validate(ctx: Any, integration_id: str, number: int) -> dict[str, Any]:
    """Dry-run the config import of the PR's manifest against the site, then post the commit
    status ``svc/content-validation`` (success or failure) on the PR's head."""
    kernel = ctx.kernel
    async with ctx.reader() as db:
        row = await ig.row_of(db, integration_id)
        pull = await _pull_row(db, integration_id, number)
    repo = await ig.repo_of(kernel, row)
    sha = pull["head_sha"]
    try:
        manifest, problem = await manifest_of(repo, sha)
    except providers.ProviderError as exc:
        raise providers.upstream(exc) from None
    if problem is not None:
        result: dict[str, Any] = {"valid": False, "errors": [{"code": "MANIFEST_MISSING", "message": problem,
                                                              "path": [MANIFEST_PATH]}], "diff": None}
    elif not isinstance(manifest, dict):
        result = {"valid": False, "errors": [{"code": "MANIFEST_INVALID", "message": "The manifest must be a JSON "
                                              "object", "path": [MANIFEST_PATH]}], "diff": None}
    else:
        async with ctx.reader() as db:
            event_ctx = EventContext(site_id=ctx.site_id, principal=ctx.principal, kernel=kernel, conn=db.conn,
                                     request_id=ctx.request_id)
            try:
                result = await schema_api.config_dry_run(kernel, db, event_ctx, manifest)
            except ApiError as exc:  # a malformed manifest is the PR's problem, not this request's
                result = {"valid": False, "errors": [d.to_dict() for d in exc.details], "diff": None}
    description = "The content configuration is valid" if result["valid"] else \
        f"{len(result['errors'])} problems in the content configuration"
    try:
        await repo.post_status(sha, result["valid"], description)
    except providers.ProviderError as exc:
        raise providers.upstream(exc) from None
    async with ctx.unit_of_work() as uow:
        await audit.record(uow.conn, action="git.validate", site_id=uow.site_id, principal=ctx.principal,
                           target_type="git_integration", target_id=integration_id,
                           details={"number": number, "sha": sha, "valid": result["valid"]},
                           request_id=ctx.request_id)
    return {**result, "number": number, "sha": sha, "status": {"context": providers.STATUS_CONTEXT,
                                                               "state": "success" if result["valid"] else "failure"}}
