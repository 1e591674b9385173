"""The constitution (``/agent/constitution``): versions of the site's rules for agents.

The rule language is a list of small JSON objects (docs/decisions/agents.md), compiled into
plain Python checks. Nothing here asks a model: a rule holds or not by arithmetic and equality.

- ``{ rule: "deny_operation", operation: create|update|delete, collection? }``
- ``{ rule: "deny_collection", collection }``
- ``{ rule: "max_writes", limit, per: hour|day, role? }``
- ``{ rule: "max_length", field, max, collection? }``

Each may carry ``id`` (a label in block reasons) and ``message``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError, ErrorDetail
from kernel.base.ids import uuid7
from kernel.base.jsoncodec import nul_path
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from plugins.agents.common import id_param, invalid, owner_of, require_admin, require_member, site_db
from plugins.agents.tables import actions, constitutions

OPERATIONS = ("create", "update", "delete")
PERIODS = {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1)}
KEYS = {"deny_operation": ({"operation"}, {"collection"}), "deny_collection": ({"collection"}, set()),
        "max_writes": ({"limit", "per"}, {"role"}), "max_length": ({"field", "max"}, {"collection"})}
MAX_RULES = 100
DRY_RUN_ACTIONS = 500


@dataclass(frozen=True)
class Write:
    """One agent write as the checks see it."""

    operation: str
    collection: str
    data: dict[str, Any] | None
    role: str | None


@dataclass(frozen=True)
class Check:
    label: str
    rule: dict[str, Any]

    def message(self, default: str) -> str:
        return str(self.rule.get("message") or default)

    def static(self, write: Write) -> str | None:
        """The reason this write is blocked, or None (rules that need no history)."""
        r = self.rule
        kind = r["rule"]
        if kind == "deny_operation" and write.operation == r["operation"] and r.get("collection") in (
                None, write.collection):
            return self.message(f"Agents may not {r['operation']} items" + (
                f" of '{r['collection']}'" if r.get("collection") else ""))
        if kind == "deny_collection" and write.collection == r["collection"]:
            return self.message(f"Agents may not touch the collection '{r['collection']}'")
        if kind == "max_length" and write.data and r.get("collection") in (None, write.collection):
            value = write.data.get(r["field"])
            if isinstance(value, str) and len(value) >= r["max"]:
                return self.message(f"'{r['field']}' must stay under {r['max']} characters")
        return None

    def over_rate(self, write: Write, recent: int) -> str | None:
        r = self.rule
        if r["rule"] == "max_writes" and r.get("role") in (None, write.role) and recent >= r["limit"]:
            return self.message(f"At most {r['limit']} agent writes an {r['per']}")
        return None


def compile_rules(rules: Any) -> list[Check]:
    """The checks of ``rules``, or 400 ``CONSTITUTION_INVALID`` with one error (and ``path``) per
    rule it cannot compile."""
    if not isinstance(rules, list) or len(rules) > MAX_RULES:
        raise invalid(f"'rules' is a list of at most {MAX_RULES} rules", ["rules"])
    errors: list[dict[str, Any]] = []
    checks: list[Check] = []
    for i, rule in enumerate(rules):
        problem = _problem(rule)
        if problem is not None:
            errors.append({"message": f"Rule {i}: {problem[1]}", "path": ["rules", i, *problem[0]]})
            continue
        checks.append(Check(str(rule.get("id") or f"rule-{i}"), rule))
    if errors:
        raise ApiError(400, "CONSTITUTION_INVALID", errors[0]["message"], path=errors[0]["path"],
                       more=[ErrorDetail("CONSTITUTION_INVALID", e["message"], e["path"], None) for e in errors[1:]])
    return checks


def _problem(rule: Any) -> tuple[list[Any], str] | None:
    if not isinstance(rule, dict):
        return [], "a rule is an object"
    kind = rule.get("rule")
    if kind not in KEYS:
        return ["rule"], f"unknown rule {str(kind)[:40]!r}; known: {', '.join(KEYS)}"
    needed, optional = KEYS[kind]
    for key in sorted(set(rule) - needed - optional - {"rule", "id", "message"}):
        return [key], f"'{kind}' takes no '{key[:40]}'"
    for key in sorted(needed - set(rule)):
        return [key], f"'{kind}' needs '{key}'"
    for key in ("id", "message"):
        if key in rule and (not isinstance(rule[key], str) or len(rule[key]) > 200):
            return [key], f"'{key}' is a string of at most 200 characters"
    for key in ("collection", "field", "role"):
        if key in rule and (not isinstance(rule[key], str) or not 0 < len(rule[key]) <= 64):
            return [key], f"'{key}' is a name of at most 64 characters"
    if kind == "deny_operation" and rule["operation"] not in OPERATIONS:
        return ["operation"], f"'operation' is one of {', '.join(OPERATIONS)}"
    if kind == "max_writes":
        if rule["per"] not in PERIODS:
            return ["per"], "'per' is 'hour' or 'day'"
        if isinstance(rule["limit"], bool) or not isinstance(rule["limit"], int) or not 0 <= rule["limit"] <= 100000:
            return ["limit"], "'limit' is an integer from 0 to 100000"
    if kind == "max_length" and (isinstance(rule["max"], bool) or not isinstance(rule["max"], int)
                                 or not 1 <= rule["max"] <= 1_000_000):
        return ["max"], "'max' is an integer from 1 to 1000000"
    return None


async def active_checks(conn: Any, site_id: str) -> list[Check]:
    db = site_db(conn, site_id)
    row = await db.one(db.select(constitutions).where(constitutions.c.status == "active"))
    return compile_rules(row["rules"]) if row is not None else []


async def recent_writes(conn: Any, site_id: str, since: dt.datetime, role: str | None) -> int:
    db = site_db(conn, site_id)
    stmt = db.select(actions, func.count()).where(actions.c.created_at >= since,
                                                  actions.c.outcome.in_(("applied", "staged")))
    if role is not None:
        stmt = stmt.where(actions.c.role == role)
    return int(await db.scalar(stmt) or 0)


async def blocked(conn: Any, site_id: str, write: Write, checks: list[Check] | None = None,
                  now: dt.datetime | None = None) -> str | None:
    """Why the active constitution (or ``checks``) blocks ``write``, or None."""
    checks = await active_checks(conn, site_id) if checks is None else checks
    now = now or now_utc()
    for check in checks:
        reason = check.static(write)
        if reason is None and check.rule["rule"] == "max_writes":
            recent = await recent_writes(conn, site_id, now - PERIODS[check.rule["per"]], check.rule.get("role"))
            reason = check.over_rate(write, recent)
        if reason is not None:
            return f"{check.label}: {reason}"[:500]
    return None


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "version": row["version"], "note": row["note"], "rules": row["rules"],
            "status": row["status"], "createdBy": row["created_by"], "createdAt": iso(row["created_at"]),
            "compiledAt": iso(row["compiled_at"]), "activatedAt": iso(row["activated_at"])}


async def list_versions(ctx: Any) -> list[dict[str, Any]]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        rows = await db.all(db.select(constitutions).order_by(constitutions.c.version.desc()).limit(200))
    return [record(r) for r in rows]


async def draft(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/constitution { rules, note? }``: a new draft version (not yet checked)."""
    site_id = await require_admin(ctx)
    reject_unknown(body, {"rules", "note"})
    rules = body.get("rules")
    if not isinstance(rules, list) or len(rules) > MAX_RULES:
        raise invalid(f"'rules' is a list of at most {MAX_RULES} rules", ["rules"])
    note = body.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > 500):
        raise invalid("'note' is a string of at most 500 characters", ["note"])
    # A draft keeps its rules as sent (compile checks them); none may hold what cannot be stored.
    where = nul_path({"rules": rules, "note": note})
    if where is not None:
        raise invalid("A string holds a NUL character (\\u0000), which cannot be stored", where)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        latest = await uow.db.scalar(uow.db.select(constitutions, func.max(constitutions.c.version)))
        row = {"id": uuid7(), "version": int(latest or 0) + 1, "note": note, "rules": rules, "status": "draft",
               "created_by": owner_of(ctx.principal), "created_at": now_utc(), "compiled_at": None,
               "activated_at": None}
        await uow.db.insert(constitutions, row)
    return record(row)


async def _load(uow: Any, version_id: str) -> Any:
    row = await uow.db.one(uow.db.select(constitutions).where(constitutions.c.id == id_param(
        version_id, "Constitution version")))
    if row is None:
        raise ApiError.not_found("Constitution version not found")
    return row


async def compile_version(ctx: Any, body: dict[str, Any], version_id: str | None = None) -> dict[str, Any]:
    """``POST /agent/constitution/compile { id }`` (or ``/agent/constitution/:id/compile``):
    compile a stored version; a draft becomes ``compiled``. ``{ rules }`` instead checks rules
    without storing them. 400 ``CONSTITUTION_INVALID`` with one error per rule it cannot compile."""
    site_id = await require_admin(ctx)
    reject_unknown(body, {"rules"} if version_id is not None else {"id", "rules"})
    if version_id is None and "rules" in body:
        if "id" in body:
            raise invalid("Give 'id' or 'rules', not both", ["rules"])
        return {"checks": [c.label for c in compile_rules(body["rules"])]}
    if version_id is None:
        if not isinstance(body.get("id"), str):
            raise invalid("'id' names a constitution version (or give 'rules' to check)", ["id"])
        version_id = body["id"]
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        row = await _load(uow, version_id)
        checks = compile_rules(row["rules"])
        changes: dict[str, Any] = {}
        if row["status"] == "draft":
            changes = {"status": "compiled", "compiled_at": now_utc()}
            await uow.db.execute(uow.db.update(constitutions).where(constitutions.c.id == row["id"]).values(**changes))
    return {**record({**row, **changes}), "checks": [c.label for c in checks]}


async def dry_run(ctx: Any, version_id: str) -> dict[str, Any]:
    """``POST /agent/constitution/:id/dry-run``: what the version would have blocked of the last
    ``DRY_RUN_ACTIONS`` agent write attempts of the past 7 days (oldest first, counting as it goes)."""
    site_id = await require_admin(ctx)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        row = await _load(uow, version_id)
        checks = compile_rules(row["rules"])
        since = now_utc() - dt.timedelta(days=7)
        recent = list(reversed(await uow.db.all(uow.db.select(actions).where(actions.c.created_at >= since)
                                                .order_by(actions.c.created_at.desc()).limit(DRY_RUN_ACTIONS))))
    would: list[dict[str, Any]] = []
    kept: list[Any] = []
    for action in recent:
        write = Write(action["operation"], action["collection"], action["data"], action["role"])
        reason = None
        for check in checks:
            reason = check.static(write)
            if reason is None and check.rule["rule"] == "max_writes":
                window = action["created_at"] - PERIODS[check.rule["per"]]
                count = sum(1 for k in kept if k["created_at"] > window and check.rule.get("role") in (None, k["role"]))
                reason = check.over_rate(write, count)
            if reason is not None:
                reason = f"{check.label}: {reason}"
                break
        if reason is None:
            kept.append(action)
        else:
            would.append({"actionId": action["id"], "goalId": action["goal_id"], "operation": action["operation"],
                          "collection": action["collection"], "itemId": action["item_id"],
                          "at": iso(action["created_at"]), "reason": reason[:500]})
    return {"version": row["version"], "examined": len(recent), "wouldBlock": would}


async def activate(ctx: Any, version_id: str) -> dict[str, Any]:
    site_id = await require_admin(ctx)
    now = now_utc()
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        row = await _load(uow, version_id)
        if row["status"] not in ("compiled", "retired", "active"):
            raise ApiError(409, "CONSTITUTION_NOT_COMPILED", "Compile the version before activating it")
        compile_rules(row["rules"])
        await uow.db.execute(uow.db.update(constitutions).where(constitutions.c.status == "active",
                                                                constitutions.c.id != row["id"])
                             .values(status="retired"))
        await uow.db.execute(uow.db.update(constitutions).where(constitutions.c.id == row["id"])
                             .values(status="active", activated_at=now))
        await audit.record(uow.conn, action="agent_constitution_activated", site_id=site_id,
                           principal=ctx.principal, target_type="agent_constitution", target_id=row["id"],
                           request_id=ctx.request_id, details={"version": row["version"]})
    return record({**row, "status": "active", "activated_at": now})
