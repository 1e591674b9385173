"""AI tests: helpers for members with rules, and a scripted OpenAI-compatible model server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from kernel.testing import Calls, HttpReceiver
from kernel.testing import shared as testing_shared


async def member_with(svc_app: Any, calls: Calls, make_member: Any, site: str, rules: list[dict[str, Any]],
                      role: str = "subscriber") -> Calls:
    """Calls as a new member of ``site`` holding ``rules`` through a policy of its own."""
    made = await make_member(site, role)
    if rules:
        await calls.grant(rules, {"userId": made.id})
        svc_app.kernel.access.invalidate(site)
    return Calls(svc_app.client, made.headers)


def tool_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}


class ScriptedModel:
    """An OpenAI-compatible chat-completions server on ``http_receiver``: each request gets the
    next scripted assistant message (``{"content"?, "tool_calls"?}``); every request is kept."""

    def __init__(self, receiver: Any) -> None:
        self.receiver = receiver
        self.script: list[dict[str, Any]] = []
        self.base_url = receiver.url("/v1")
        receiver.respond("/v1/chat/completions", self._answer)

    def reset(self) -> None:
        """As new, on the same server: no script, no requests kept, the scripted answer again
        (a test may have replaced it)."""
        self.script = []
        self.receiver.reset()
        self.receiver.respond("/v1/chat/completions", self._answer)

    def _answer(self, request: Any) -> tuple[int, bytes, dict[str, str]]:
        message = self.script.pop(0) if self.script else {"content": "done"}
        if request.json().get("stream"):
            return 200, self._events(message), {"Content-Type": "text/event-stream"}
        body = {"id": "cmpl-1", "object": "chat.completion", "model": "scripted",
                "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                             "message": {"role": "assistant", "content": message.get("content"),
                                         **({"tool_calls": message["tool_calls"]} if message.get("tool_calls")
                                            else {})}}]}
        return 200, json.dumps(body).encode(), {}

    @staticmethod
    def _events(message: dict[str, Any]) -> bytes:
        """The message as a chat-completions stream: its text word by word, then each tool call
        as an indexed delta, then ``[DONE]``."""
        def chunk(delta: dict[str, Any]) -> str:
            return "data: " + json.dumps({"object": "chat.completion.chunk", "model": "scripted",
                                          "choices": [{"index": 0, "delta": delta}]}) + "\n\n"

        words = (message.get("content") or "").split(" ")
        out = [chunk({"role": "assistant"})]
        out += [chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(words) if w]
        out += [chunk({"tool_calls": [{"index": i, **call}]}) for i, call in enumerate(message.get("tool_calls") or [])]
        return ("".join(out) + "data: [DONE]\n\n").encode()

    def requests(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.receiver.received("/v1/chat/completions")]


@pytest_asyncio.fixture
async def model(http_receiver: Any) -> ScriptedModel:
    return ScriptedModel(http_receiver)


@pytest.fixture(scope="module")
def module_model() -> Iterator[ScriptedModel]:
    """One scripted model server for a module whose tests share an app that asks it."""
    receiver = HttpReceiver()
    try:
        yield ScriptedModel(receiver)
    finally:
        receiver.stop()


@pytest.fixture
def model_of_the_module(module_model: ScriptedModel) -> Iterator[ScriptedModel]:
    """``module_model`` reset for the test (a module binds ``model = model_of_the_module``); what
    its responders raised fails the test (as ``http_receiver`` does)."""
    module_model.reset()
    yield module_model
    module_model.receiver.check()


def shared_site_asking_the_model(**env: str) -> Any:
    """A module's ``shared_site``: its shared app asks ``module_model`` (``SVC_AI_BASE_URL``),
    with ``env`` besides (``shared_site = shared_site_asking_the_model(SVC_AI_MODEL="x")``)."""
    return testing_shared.shared_site_started_with(
        lambda request: {"env": {"SVC_AI_BASE_URL": request.getfixturevalue("module_model").base_url, **env}}
    )


async def admin_with_model(make_app: Any, model: ScriptedModel) -> Calls:
    """-- defects: Calls as the admin of a new site of a new app whose copilot asks ``model``."""
    app = await make_app(env={"SVC_AI_BASE_URL": model.base_url, "SVC_AI_MODEL": "scripted"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    return Calls(app.client, {**admin, "X-Svc-Site": await app.create_site(admin)})


def mcp_client(server: Any, headers: dict[str, str]) -> Client:
    """The official SDK's client for ``/api/v1/mcp`` of a live server, with ``headers``."""
    http = httpx2.AsyncClient(headers=headers, timeout=20.0)
    return Client(streamable_http_client(f"{server.base_url}/api/v1/mcp", http_client=http))
