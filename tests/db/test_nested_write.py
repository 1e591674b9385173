"""A bus filter that writes without the unit of work it runs in is a clear, immediate 500.

Its write would open a second transaction in the task that holds the first: on SQLite it used
to wait on its own write lock for the busy timeout (10 s) and end in "database is locked"; on
PostgreSQL it would wait on its own row locks, or commit outside the request's transaction.
``Database.begin`` refuses it at once with ``NestedWriteError`` (a RuntimeError whose message
says to pass ``uow=ctx.uow``), the request rolls back and answers 500 INTERNAL, and the log
says why. The same filter passing ``uow=ctx.uow`` writes in the request's transaction.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest_asyncio

from kernel import hookimpl
from kernel.auth.principal import Principal
from kernel.db import NestedWriteError
from kernel.hooks.plugins import available_plugins
from kernel.testing import Calls, TestApp
from plugins.items import api as items

ADMIN = Principal(kind="user", is_instance_admin=True)


class LogWriter:
    """Logs each new article as an item of ``logs``: right for ``good`` articles (it joins the
    request's unit of work), wrong for ``bad`` ones (it opens a transaction of its own)."""

    name = "log_writer_probe"
    requires = ("items",)

    @hookimpl
    def register_event_handlers(self, bus: Any, kernel: Any) -> None:
        bus.on_filter("articles.items.create", self.log_article)

    @staticmethod
    async def log_article(event: str, payload: Any, ctx: Any) -> None:
        actor = items.context(ctx.kernel, ctx.site_id, ADMIN, ctx.request_id)
        kind = payload["after"].get("title")
        uow = ctx.uow if kind == "good" else None
        await items.create(actor, "logs", {"article": payload["id"]}, uow=uow)


@pytest_asyncio.fixture
async def svc_app(make_app) -> TestApp:
    """Every installed plugin and the probe (the fixtures ``site`` and ``calls`` use this app)."""
    return await make_app(plugins=[*sorted(available_plugins()), LogWriter()])


async def test_a_filter_writing_without_the_uow_fails_at_once_with_a_clear_error(calls: Calls, caplog):
    await calls.collection("articles", {"title": "string"})
    await calls.collection("logs", {"article": "string"})
    await calls.create("articles", {"id": "a1", "title": "good"})
    with caplog.at_level(logging.ERROR, logger="svc.http"):
        error = await calls.err("post", "/items/articles", 500, "INTERNAL", json={"id": "a2", "title": "bad"})
    assert "request id" in error["message"]
    [record] = [r for r in caplog.records if r.exc_info and isinstance(r.exc_info[1], NestedWriteError)]
    assert "uow=ctx.uow" in str(record.exc_info[1])
    assert "database is locked" not in caplog.text
    # The request rolled back; the right way still works afterwards (nothing was left locked).
    assert [a["id"] for a in (await calls.list("articles"))["data"]] == ["a1"]
    await calls.create("articles", {"id": "a3", "title": "good"})
    assert sorted(entry["article"] for entry in (await calls.list("logs"))["data"]) == ["a1", "a3"]
