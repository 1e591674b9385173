"""Helpers of the releases tests: a ``posts`` collection with draft items, release calls."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kernel.db.meta import now_utc
from kernel.testing import Calls


def later(**delta: Any) -> str:
    return (now_utc() + dt.timedelta(**delta)).isoformat().replace("+00:00", "Z")


async def draft_posts(calls: Calls, *titles: str, collection: str = "posts") -> list[str]:
    if (await calls.call("get", f"/collections/{collection}")).status_code != 200:
        await calls.collection(collection, {"title": "string"})
    made = await calls.create(collection, [{"title": t, "status": "draft"} for t in titles])
    return [str(m["id"]) for m in made]


def entries(ids: list[str], collection: str = "posts", status: str = "published") -> list[dict[str, Any]]:
    return [{"collection": collection, "itemId": i, "targetStatus": status} for i in ids]


async def release(calls: Calls, ids: list[str] | None = None, **body: Any) -> dict[str, Any]:
    body = {"name": "Spring launch", "atomicityMode": "all_or_nothing", **body}
    if ids is not None:
        body["addItems"] = entries(ids)
    return await calls.ok("post", "/releases", status=201, json=body)


async def statuses(calls: Calls, ids: list[str], collection: str = "posts") -> list[str]:
    return [(await calls.get(collection, i))["status"] for i in ids]


async def studio_member(svc_app: Any, site: str, calls: Calls, make_member: Any, rules: list[dict[str, Any]]) -> Any:
    """A member of ``site`` with a studio role of its own holding ``rules``."""
    role = await calls.ok("post", "/roles", status=201, json={"name": f"Editors {len(rules)}-{id(rules)}"})
    member = await make_member(site, role["id"])
    await calls.grant(rules, {"userId": member.id})
    svc_app.kernel.access.invalidate(site)
    return member
