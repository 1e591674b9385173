"""Import a config manifest: validate, diff, and (without ``dryRun``) apply in one transaction.

Modes decide what happens to what the manifest leaves out: ``merge`` keeps it, ``replace-all``
deletes it, ``replace-managed`` deletes it only within ``managedScopes`` (``schema``,
``settings``, ``webhooks`` or ``collection:<name>``, which covers the collection, its fields
and the relations it holds). Entries are complete: an entry's absent keys take their defaults.

Destructive changes are refused with 409 ``DESTRUCTIVE_BLOCKED`` unless ``allowDestructive``:
a field type change, a relation ``onDelete`` widened to ``cascade``, and dropping a collection
or field that holds data, which the bus filter ``schema.data_check`` answers (see
``applying.holding_data``). The schema services still run their own veto filters after that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel.base.errors import ApiError
from kernel.core.uow import UnitOfWork
from kernel.messaging.bus import EventContext
from kernel.policy import audit
from plugins.schema.bundles.applying import apply_plan, holding_data, lock_schema
from plugins.schema.bundles.diffing import RESOURCES, Plan, Problem, Scope, plan_schema, risk_of, same
from plugins.schema.config.manifest import Manifest
from plugins.schema.config.manifest_hooks import SECTION_NAMES
from plugins.schema.snapshot import load_snapshot

MODES = ("merge", "replace-managed", "replace-all")
ALWAYS_DESTRUCTIVE = ("type_change", "onDelete_widening")


@dataclass
class SectionPlan:
    """Entries of one provided section to create, update or delete (by key)."""

    create: list[dict[str, Any]] = field(default_factory=list)
    update: list[dict[str, Any]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"create": len(self.create), "update": len(self.update), "delete": len(self.delete),
                "unchanged": len(self.unchanged)}


@dataclass
class Evaluation:
    """Everything an import found: problems, the schema plan, section plans, blocked changes."""

    problems: list[Problem]
    plan: Plan | None = None
    sections: dict[str, SectionPlan] = field(default_factory=dict)
    destructive: list[dict[str, Any]] = field(default_factory=list)


def schema_scope(mode: str, managed: set[str]) -> Scope:
    """What ``mode`` deletes when the manifest leaves it out."""
    if mode == "replace-all":
        return Scope(lambda name: True, lambda c, f: True, lambda rel: True)
    if mode == "merge":
        return Scope()

    def owned(collection: str) -> bool:
        return "schema" in managed or f"collection:{collection}" in managed

    return Scope(owned, lambda c, f: owned(c), lambda rel: owned(rel.collection))


def _deletes_section(mode: str, managed: set[str], name: str) -> bool:
    return mode == "replace-all" or (mode == "replace-managed" and name in managed)


async def _plan_section(provider: Any, db: Any, wanted: list[tuple[dict[str, Any], list[Any]]],
                        delete_absent: bool) -> SectionPlan:
    have = {e.get(provider.key): e for e in await provider.export(db)}
    out = SectionPlan()
    for entry, _ in wanted:
        key = entry[provider.key]
        if key not in have:
            out.create.append(entry)
        elif same(have[key], entry):
            out.unchanged.append(key)
        else:
            out.update.append(entry)
    if delete_absent:
        listed = {entry[provider.key] for entry, _ in wanted}
        out.delete = [k for k in have if k not in listed]
    return out


async def evaluate(kernel: Any, db: Any, ctx: EventContext, manifest: Manifest, mode: str,
                   providers: dict[str, Any]) -> Evaluation:
    """Validate and diff ``manifest`` against the site read through ``db``; writes nothing."""
    if manifest.problems and manifest.problems[0].code == "UNSUPPORTED_MANIFEST_VERSION":
        return Evaluation(manifest.problems)
    plan = plan_schema(await load_snapshot(db), manifest.desired, schema_scope(mode, manifest.managed))
    out = Evaluation([*manifest.problems, *plan.problems], plan)
    for name, provider in providers.items():
        out.sections[name] = await _plan_section(provider, db, manifest.sections.get(name, []),
                                                 _deletes_section(mode, manifest.managed, name))
    if not out.problems:
        always = [r for r in plan.risky if r["action"] in ALWAYS_DESTRUCTIVE]
        with_data = await holding_data(kernel, ctx, [r for r in plan.risky if r["action"] == "delete"])
        out.destructive = [{k: v for k, v in r.items() if k != "collectionId"} for r in [*always, *with_data]]
    return out


def diff_view(ev: Evaluation) -> dict[str, Any] | None:
    """Per-resource counts, ``risk``, the destructive changes and the non-trivial changes."""
    if ev.plan is None or ev.problems:
        return None
    plan = ev.plan
    out: dict[str, Any] = {resource: plan.counts(resource) for resource in RESOURCES}
    for name in SECTION_NAMES:
        out[name] = (ev.sections[name].counts() if name in ev.sections
                     else {"create": 0, "update": 0, "delete": 0, "unchanged": 0})
    deletes = sum(out[n]["delete"] for n in SECTION_NAMES)
    updates = sum(out[n]["update"] for n in SECTION_NAMES)
    out["risk"] = risk_of(plan, deletes, updates)
    out["destructive"] = ev.destructive
    out["changes"] = {resource: plan.lists(resource, with_unchanged=False) for resource in RESOURCES}
    return out


def result(ev: Evaluation) -> dict[str, Any]:
    """``{ valid, errors, diff }`` (a dry run's whole answer)."""
    return {"valid": not ev.problems, "errors": [p.to_dict() for p in ev.problems], "diff": diff_view(ev)}


async def dry_run(kernel: Any, db: Any, ctx: EventContext, manifest: Manifest, mode: str,
                  providers: dict[str, Any]) -> dict[str, Any]:
    """Validate and diff without writing (``db`` is a plain read connection)."""
    return result(await evaluate(kernel, db, ctx, manifest, mode, providers))


async def apply_manifest(uow: UnitOfWork, manifest: Manifest, mode: str, providers: dict[str, Any], *,
                         allow_destructive: bool) -> dict[str, Any]:
    """Apply ``manifest`` in ``uow``: 422 when invalid, 409 when destructive and not allowed."""
    await lock_schema(uow)
    ev = await evaluate(uow.kernel, uow.db, uow.event_context(), manifest, mode, providers)
    if ev.problems:
        errors = [p.to_dict() for p in ev.problems]
        raise ApiError(422, "VALIDATION_FAILED", f"The manifest is not valid ({len(errors)} problems)",
                       path=ev.problems[0].path, extensions={"errors": errors})
    if ev.destructive and not allow_destructive:
        raise ApiError(409, "DESTRUCTIVE_BLOCKED", f"{len(ev.destructive)} destructive changes need "
                       "allowDestructive=true", extensions={"changes": ev.destructive})
    assert ev.plan is not None
    applied = await apply_plan(uow, ev.plan, allow_destructive=True)  # checked just above
    for name, section in ev.sections.items():
        provider = providers[name]
        for key in section.delete:
            await provider.delete(uow, key)
        for entry in [*section.create, *section.update]:
            await provider.put(uow, entry)
        applied["created"] += len(section.create)
        applied["updated"] += len(section.update)
        applied["deleted"] += len(section.delete)
    if any(applied.values()):
        await audit.record(uow.conn, action="config.import", site_id=uow.site_id, principal=uow.principal,
                           target_type="site", target_id=uow.site_id, request_id=uow.request_id,
                           details={"mode": mode, **applied})
    return {**result(ev), "applied": applied}
