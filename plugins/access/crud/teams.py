"""Teams: list, read, create, update, delete.

A team is ``{ id, name, members: [userId] }``. ``members`` on create or update replaces the
whole set; every member must be a member of the site. Policies attached to a team apply to
each of its members.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.access.common import (
    check_body,
    check_name_free,
    name_value,
    page_of,
    record_change,
    ref_id,
    row_by_id,
)
from plugins.access.tables import attachments, memberships, team_members, teams

TEAM_FIELDS = frozenset({"name", "members"})
MAX_MEMBERS = 1000


def team_record(row: Any, members: list[str]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "members": members}


async def _members_of(db: SiteDB, team_ids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {tid: [] for tid in team_ids}
    if team_ids:
        stmt = (db.select(team_members).where(team_members.c.team_id.in_(team_ids))
                .order_by(team_members.c.user_id))
        for row in await db.all(stmt):
            out[row["team_id"]].append(row["user_id"])
    return out


async def list_teams(ctx: Any, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        rows, total = await page_of(db, teams, limit, offset)
        members = await _members_of(db, [r["id"] for r in rows])
    return [team_record(r, members[r["id"]]) for r in rows], total


async def get_team(ctx: Any, team_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        row = await row_by_id(db, teams, team_id, "team")
        members = await _members_of(db, [team_id])
    return team_record(row, members[team_id])


def _parse(body: Any, *, creating: bool) -> dict[str, Any]:
    body = check_body(body, TEAM_FIELDS)
    values: dict[str, Any] = {}
    if creating or "name" in body:
        values["name"] = name_value(body.get("name"))
    if "members" in body and (body["members"] is not None or not creating):
        members = body["members"]
        if not isinstance(members, list) or len(members) > MAX_MEMBERS:
            raise ApiError.validation(f"'members' must be a list of at most {MAX_MEMBERS} user ids",
                                      path=["members"])
        values["members"] = sorted({ref_id(m, ["members", i]) for i, m in enumerate(members)})
    return values


async def _check_members(db: SiteDB, user_ids: list[str]) -> None:
    if not user_ids:
        return
    found = {r["user_id"] for r in await db.all(
        db.select(memberships, memberships.c.user_id).where(memberships.c.user_id.in_(user_ids)))}
    for user_id in user_ids:
        if user_id not in found:
            raise ApiError.validation(f"User '{user_id}' is not a member of this site", path=["members"])


async def create_team(ctx: Any, body: Any) -> dict[str, Any]:
    values = _parse(body, creating=True)
    members = values.get("members", [])
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await check_name_free(db, teams, "team", values["name"])
        await _check_members(db, members)
        row = {"id": uuid7(), "name": values["name"], "created_at": now_utc()}
        try:
            await db.insert(teams, row)
        except IntegrityError as exc:
            raise ApiError.conflict(f"A team named '{values['name']}' already exists in this site") from exc
        await db.insert(team_members, [{"team_id": row["id"], "user_id": u} for u in members])
        await record_change(ctx, uow, "team.create", "team", row["id"], {"name": row["name"], "memberIds": members})
    return team_record(row, members)


async def update_teams(ctx: Any, team_ids: list[str], body: Any) -> list[dict[str, Any]]:
    """Apply one patch to each team, all or nothing (also the Directus bulk form)."""
    values = _parse(body, creating=False)
    out = []
    async with ctx.unit_of_work() as uow:
        db = uow.db
        if "members" in values:
            await _check_members(db, values["members"])
        for team_id in team_ids:
            out.append(await _update_one(ctx, uow, team_id, values))
    return out


async def _update_one(ctx: Any, uow: Any, team_id: str, values: dict[str, Any]) -> dict[str, Any]:
    db = uow.db
    row = dict(await row_by_id(db, teams, team_id, "team"))
    current = (await _members_of(db, [team_id]))[team_id]
    details: dict[str, Any] = {}
    if "name" in values and values["name"] != row["name"]:
        await check_name_free(db, teams, "team", values["name"], exclude=team_id)
        try:
            await db.execute(db.update(teams).where(teams.c.id == team_id).values(name=values["name"]))
        except IntegrityError as exc:
            raise ApiError.conflict("A team with that name already exists in this site") from exc
        row["name"] = values["name"]
        details["renamed"] = True
    if "members" in values and values["members"] != current:
        added = sorted(set(values["members"]) - set(current))
        removed = sorted(set(current) - set(values["members"]))
        if removed:
            await db.execute(db.delete(team_members).where(team_members.c.team_id == team_id,
                                                           team_members.c.user_id.in_(removed)))
        await db.insert(team_members, [{"team_id": team_id, "user_id": u} for u in added])
        current = values["members"]
        details.update(addedUserIds=added, removedUserIds=removed)
    if details:
        await record_change(ctx, uow, "team.update", "team", team_id, {"name": row["name"], **details})
    return team_record(row, current)


async def delete_teams(ctx: Any, team_ids: list[str]) -> None:
    """Delete each team with its memberships and policy attachments, all or nothing."""
    async with ctx.unit_of_work() as uow:
        db = uow.db
        for team_id in team_ids:
            row = await row_by_id(db, teams, team_id, "team")
            await db.execute(db.delete(attachments).where(attachments.c.team_id == team_id))
            await db.execute(db.delete(team_members).where(team_members.c.team_id == team_id))
            await db.execute(db.delete(teams).where(teams.c.id == team_id))
            await record_change(ctx, uow, "team.delete", "team", team_id, {"name": row["name"]})


