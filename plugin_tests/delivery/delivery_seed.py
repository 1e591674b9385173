"""Helpers of the delivery tests: a site with a public ``pages`` collection whose sections
reference items the public role may and may not read, and a counter of database queries."""

from __future__ import annotations

import contextlib
from typing import Any

from sqlalchemy import event

from kernel.testing import Calls

PUBLIC_RULES = [
    {"collection": "pages", "action": "read", "fields": ["slug", "title", "summary", "sections"],
     "conditions": {"status": {"_eq": "published"}}},
    {"collection": "heroes", "action": "read", "fields": ["heading"],
     "conditions": {"status": {"_eq": "published"}}},
]


async def grant_public(app: Any, calls: Calls, site: str, rules: list[dict[str, Any]]) -> None:
    roles = await calls.ok("get", "/roles")
    public = next(r for r in roles if r.get("systemKey") == "public")
    await calls.grant(rules, {"roleId": public["id"]})
    app.kernel.access.invalidate(site)


async def seed_site(app: Any, calls: Calls, site: str, *, title: str = "Home", heading: str = "Hello") -> None:
    """``pages`` (slug, title, summary, sections), ``heroes`` (heading, secret) and ``vault``
    (not public); the page ``home`` references a public hero, a draft hero, a vault item and a
    plain section; ``hidden`` is a draft page."""
    await calls.collection("pages", {"slug": "string", "title": "string", "summary": "string",
                                     "sections": "json", "notes": "string"})
    await calls.collection("heroes", {"heading": "string", "secret": "string"})
    await calls.collection("vault", {"code": "string"})
    await calls.create("heroes", [{"id": "h1", "heading": heading, "secret": "s1"},
                                  {"id": "h2", "heading": "Draft", "secret": "s2", "status": "draft"}])
    await calls.create("vault", {"id": "v1", "code": "c1"})
    sections = [{"collection": "heroes", "item": "h1", "layout": "wide"},
                {"collection": "heroes", "item": "h2"},
                {"collection": "vault", "item": "v1"},
                {"type": "text", "body": "plain"}]
    await calls.create("pages", [
        {"id": "p-home", "slug": "home", "title": title, "summary": "The front page", "sections": sections,
         "notes": "internal"},
        {"id": "p-hidden", "slug": "hidden", "title": "Hidden", "status": "draft"},
        {"id": "p-about", "slug": "about", "title": "About [us]", "summary": "Who\nwe are"},
    ])
    await grant_public(app, calls, site, PUBLIC_RULES)


class QueryCounter:
    """Counts the SQL statements the app's engine runs inside ``with counter:``."""

    def __init__(self, app: Any) -> None:
        self.engine = app.kernel.db.engine.sync_engine
        self.statements: list[str] = []

    def _seen(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.statements.append(statement)

    def __enter__(self) -> QueryCounter:
        self.statements.clear()
        event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc: Any) -> None:
        with contextlib.suppress(Exception):
            event.remove(self.engine, "before_cursor_execute", self._seen)
