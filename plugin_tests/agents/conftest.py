"""Agents tests: a posts collection and an agent role writing it."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from kernel.db.meta import now_utc


async def posts(calls: Any, title: str = "hello") -> str:
    """A ``posts`` collection with one item; returns its id."""
    await calls.collection("posts", {"title": "string", "body": "text"})
    return str((await calls.create("posts", {"title": title, "body": "words"}))["id"])


async def writer_role(calls: Any, autonomy: str = "stage", **extra: Any) -> dict[str, Any]:
    return await calls.ok("post", "/agent/roles", status=201, json={
        "name": "writer", "description": "Keeps posts tidy", "collections": ["posts"], "autonomy": autonomy,
        **extra})


def update_line(item_id: str, data: dict[str, Any], collection: str = "posts") -> str:
    return f"update {collection} {item_id} {json.dumps(data)}"


async def goal(calls: Any, description: str, role: str | None = "writer", **extra: Any) -> dict[str, Any]:
    body = {"title": "tidy", "description": description, "execution": "sync", **extra}
    if role is not None:
        body["role"] = role
    return await calls.ok("post", "/agent/goals", status=201, json=body)


def later(hours: float = 2) -> dt.datetime:
    return now_utc() + dt.timedelta(hours=hours)


async def member_as(svc_app: Any, calls: Any, make_member: Any, site: str, role_name: str,
                    rules: list[dict[str, Any]] | None = None) -> Any:
    """Calls as a new studio member of ``site`` whose role is named ``role_name`` (its capability
    set: ``review:posts``, ``agents:freeze``), with ``rules`` granted to it."""
    from kernel.testing import Calls

    role = await calls.ok("post", "/roles", status=201, json={"name": role_name})
    member = await make_member(site, role["id"])
    if rules:
        await calls.grant(rules, {"userId": member.id})
    svc_app.kernel.access.invalidate(site)
    return Calls(svc_app.client, member.headers)
