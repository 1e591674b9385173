"""GitOps: reconcile ``svc/intents.json`` of the repository into agent intents, with a drift scan.

The integration keeps a snapshot of the intents as they were at the last sync (by key). A sync
reads the file at ``ref`` (default ``HEAD``, the default branch), the site's intents (the store
the ``gitops_intents`` hook answers, the agents plugin's: ``export_intents``) and compares each
side with the snapshot:

- changed in git only (or new in git): imported (the store's ``import_intents``, source
  ``git:<integrationId>@<sha or ref>``);
- changed in svc only: reported in ``driftInSvc`` and left as they are (git does not overwrite
  an edit made in svc; commit it to the file to end the drift);
- changed on both sides differently: reported in ``conflicts`` and not applied;
- listed in the snapshot but gone from the file: reported in ``removedInGit`` (not deleted).

The first sync has no snapshot: svc's intents count as the baseline, so everything the file
says differently is imported and intents only svc has are reported as drift.
"""

from __future__ import annotations

import json
from typing import Any

from kernel import ApiError
from kernel.base.jsoncodec import nul_path
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from plugins.git import integrations as ig
from plugins.git import providers
from plugins.git.tables import integrations

INTENTS_PATH = "svc/intents.json"
MAX_FILE = 1024 * 1024


def _ref(body: Any) -> str:
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown(body, {"ref"})
    ref = body.get("ref", "HEAD")
    if not isinstance(ref, str) or not 0 < len(ref) <= 255 or any(ord(c) < 33 or ord(c) > 126 for c in ref) \
            or ".." in ref:
        raise ApiError.validation("'ref' must be a branch, tag or commit name", path=["ref"])
    return ref


def _parse(raw: bytes | None) -> list[dict[str, Any]]:
    if raw is None:
        raise ApiError(422, "VALIDATION_FAILED", f"{INTENTS_PATH} is not in the repository at that ref",
                       path=[INTENTS_PATH])
    if len(raw) > MAX_FILE:
        raise ApiError(422, "VALIDATION_FAILED", f"{INTENTS_PATH} is larger than {MAX_FILE} bytes", path=[INTENTS_PATH])
    try:
        found = json.loads(raw)
    except ValueError:
        raise ApiError(422, "VALIDATION_FAILED", f"{INTENTS_PATH} is not valid JSON", path=[INTENTS_PATH]) from None
    where = nul_path(found)
    if where is not None:  # PostgreSQL stores a NUL in neither text nor JSONB
        raise ApiError(422, "VALIDATION_FAILED", f"{INTENTS_PATH} holds a NUL character (\\u0000)",
                       path=[INTENTS_PATH, *where])
    if isinstance(found, dict) and "intents" in found:
        found = found["intents"]
    if not isinstance(found, list) or not all(isinstance(i, dict) and isinstance(i.get("key"), str) for i in found):
        raise ApiError(422, "VALIDATION_FAILED", f"{INTENTS_PATH} must be a list of intents, each with a 'key'",
                       path=[INTENTS_PATH])
    keys = [i["key"] for i in found]
    twice = next((k for n, k in enumerate(keys) if k in keys[:n]), None)
    if twice is not None:
        raise ApiError(422, "VALIDATION_FAILED", f"{INTENTS_PATH} lists the key '{twice[:64]}' twice",
                       path=[INTENTS_PATH])
    return found


def intents_store(kernel: Any) -> Any:
    """The store of content intents (the ``gitops_intents`` hook; the agents plugin's), else 404:
    without it there is nothing to sync into."""
    store = kernel.pm.hook.gitops_intents(kernel=kernel)
    if store is None:
        raise ApiError.not_found("GitOps sync needs the agents plugin, which is not enabled")
    return store


async def sync(ctx: Any, integration_id: str, body: Any) -> dict[str, Any]:
    store = intents_store(ctx.kernel)
    ref = _ref(body)
    async with ctx.reader() as db:
        row = await ig.row_of(db, integration_id)
    repo = await ig.repo_of(ctx.kernel, row)
    try:
        in_git = {i["key"]: i for i in _parse(await repo.file(INTENTS_PATH, ref))}
    except providers.ProviderError as exc:
        raise providers.upstream(exc) from None
    in_svc = {i["key"]: i for i in await store.export_intents(ctx)}
    snapshot = row["gitops_snapshot"]
    base: dict[str, Any] = dict(snapshot) if isinstance(snapshot, dict) else dict(in_svc)
    apply, conflicts, drift, removed = [], [], [], []
    for key, wanted in in_git.items():
        seen = base.get(key)
        git_changed = _differs(wanted, seen)
        svc_changed = _differs(in_svc.get(key), seen)
        if not git_changed:
            continue
        if svc_changed and _differs(in_svc.get(key), wanted):
            conflicts.append(key)
        else:
            apply.append(wanted)
    for key, current in in_svc.items():
        if key in conflicts or not _differs(current, in_git.get(key)):
            continue
        if key not in in_git and isinstance(snapshot, dict) and key in base and not _differs(current, base[key]):
            removed.append(key)  # git dropped it, svc did not touch it
        elif key not in in_git or _differs(current, base.get(key)):
            drift.append(key)  # only svc has it, or svc changed it and git did not
    source = f"git:{integration_id}@{ref}"
    result = await store.import_intents(ctx, apply, source=source) if apply else \
        {"created": [], "updated": [], "unchanged": []}
    after = {i["key"]: i for i in await store.export_intents(ctx)}
    # The new baseline: git's version for what was applied (as stored), the old one for the
    # rest (a drift in svc stays a drift; a conflict stays until one side gives way).
    new_base = {k: v for k, v in base.items() if k in conflicts}
    applied = {i["key"] for i in apply}
    new_base.update({k: after.get(k, v) if k in applied else base.get(k, v) for k, v in in_git.items()
                     if k not in conflicts})
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        await ig.row_of(uow.db, integration_id, lock=True)
        await uow.db.execute(uow.db.update(integrations).where(integrations.c.id == integration_id)
                             .values(gitops_snapshot=new_base, gitops_synced_at=now))
        await audit.record(uow.conn, action="git.gitops.sync", site_id=uow.site_id, principal=ctx.principal,
                           target_type="git_integration", target_id=integration_id,
                           details={"ref": ref, "applied": len(apply), "conflicts": len(conflicts),
                                    "drift": len(drift)}, request_id=ctx.request_id)
    return {"ref": ref, "created": result["created"], "updated": result["updated"],
            "unchanged": sorted(set(in_git) - set(result["created"]) - set(result["updated"]) - set(conflicts)),
            "changedInGit": sorted(i["key"] for i in apply), "driftInSvc": sorted(drift),
            "conflicts": sorted(conflicts), "removedInGit": sorted(removed), "syncedAt": iso(now)}


def _differs(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)
