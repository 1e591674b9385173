"""An after-commit step never fails a committed write: its exception is logged, the client gets
its 2xx, and the data is there."""

from __future__ import annotations

import logging
from typing import Any

from kernel.hooks.hookspecs import hookimpl
from kernel.testing import Calls


class Boom:
    """A plugin whose after-commit callback and action handler both raise."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    @hookimpl
    def register_event_handlers(self, bus: Any, kernel: Any) -> None:
        def on_create(event: str, payload: Any, ctx: Any) -> None:
            def callback() -> None:
                self.ran.append("callback")
                raise RuntimeError("after-commit callback broke")

            ctx.uow.after_commit(callback)

        async def action(event: str, payload: Any, ctx: Any) -> None:
            self.ran.append("action")
            raise RuntimeError("action broke")

        bus.on_filter("items.create", on_create)
        bus.on_action("items.create", action)


async def test_a_raising_after_commit_step_does_not_fail_the_write(make_app, caplog):
    plugin = Boom()
    app = await make_app(plugins=[plugin])
    token = await app.login(site="default")
    calls = Calls(app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"})
    await calls.collection("notes", {"text": "string"})
    with caplog.at_level(logging.ERROR):
        created = await calls.create("notes", {"id": "n1", "text": "kept"})
    assert created["text"] == "kept"
    assert plugin.ran == ["callback", "action"]
    assert (await calls.get("notes", "n1"))["text"] == "kept"
    assert "after-commit callback" in caplog.text and "broke" in caplog.text
    events = (await app.kernel.events.read_after("default", types=["items.*"])).events
    assert [(e.type, e.item_id) for e in events] == [("items.create", "n1")]
