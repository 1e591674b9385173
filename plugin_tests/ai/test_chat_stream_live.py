"""``POST /ai/chat`` streamed over a real socket (uvicorn on 127.0.0.1, httpx streaming): events
reach the client as the model sends them, not when the turn ends, and a client that goes away
ends the model provider's call (docs/ai.md, "Streaming"). The model is a small chat-completions
server of this module that sends its first chunk, then waits for the test."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import pytest_asyncio

from kernel.testing import Calls

CHAT = "/api/v1/ai/chat"


def chunk(content: str) -> bytes:
    body = {"object": "chat.completion.chunk", "model": "held",
            "choices": [{"index": 0, "delta": {"content": content}}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class HeldModel:
    """An OpenAI-compatible streaming server: each request gets ``first``, then the rest (``rest``
    and ``[DONE]``) only once the test sets ``release``; a client that hangs up first sets
    ``hung_up`` and gets nothing more."""

    def __init__(self, first: str = "Hello", rest: str = " world") -> None:
        self.first, self.rest = first, rest
        self.release = asyncio.Event()
        self.first_sent = asyncio.Event()
        self.hung_up = asyncio.Event()
        self.last_sent = False
        self.requests: list[dict[str, Any]] = []

    async def start(self) -> HeldModel:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.base_url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    def reset(self) -> None:
        for event in (self.release, self.first_sent, self.hung_up):
            event.clear()
        self.last_sent = False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            self.requests.append(json.loads(await reader.readexactly(length)))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                         + chunk(self.first))
            await writer.drain()
            self.first_sent.set()
            eof = asyncio.ensure_future(reader.read(1))  # b"": the client closed the connection
            released = asyncio.ensure_future(self.release.wait())
            done, _ = await asyncio.wait({eof, released}, return_when=asyncio.FIRST_COMPLETED)
            if eof in done:
                released.cancel()
                self.hung_up.set()
                return
            eof.cancel()
            writer.write(chunk(self.rest) + b"data: [DONE]\n\n")
            await writer.drain()
            self.last_sent = True
        finally:
            writer.close()

    async def stop(self) -> None:
        self.server.close()
        await self.server.wait_closed()


@pytest_asyncio.fixture
async def held_model():
    model = await HeldModel().start()
    try:
        yield model
    finally:
        await model.stop()


async def read_event(lines: Any) -> tuple[str, dict[str, Any]]:
    """The next ``(event, data)`` of an event stream's lines (comments skipped)."""
    event, data = "message", []
    async for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            return event, json.loads("\n".join(data))
    raise AssertionError("the stream ended")


async def test_a_streamed_turn_arrives_as_the_model_speaks_and_a_hang_up_ends_the_provider_call(
        make_app, live_server, held_model, caplog):
    app = await make_app(env={"SVC_AI_BASE_URL": held_model.base_url, "SVC_AI_API_KEY": "sk-test-key",
                              "SVC_AI_MODEL": "held-1", "SVC_SSE_HEARTBEAT_SECONDS": "1"})
    server = await live_server(app)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    headers = {**admin, "X-Svc-Site": site}

    # 1. Incremental: the first event is read while the model still holds its last chunk.
    async with server.client.stream("POST", CHAT, json={"message": "greet me", "stream": True},
                                    headers=headers) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
        lines = resp.aiter_lines()
        assert await read_event(lines) == ("text", {"content": "Hello"})
        assert held_model.last_sent is False and not held_model.release.is_set()
        held_model.release.set()
        assert await read_event(lines) == ("text", {"content": " world"})
        kind, done = await read_event(lines)
    assert held_model.last_sent is True
    assert kind == "done" and done["status"] == "answered" and done["message"] == "Hello world"
    assert held_model.requests[-1]["stream"] is True

    # 2. The client hangs up after the first event: the provider's connection is closed (the
    # model never sends its last chunk) and the turn keeps the question, not half an answer.
    held_model.reset()
    caplog.set_level(logging.INFO)
    caplog.clear()
    async with server.client.stream("POST", CHAT, json={"message": "and again", "stream": True},
                                    headers=headers) as resp:
        lines = resp.aiter_lines()
        assert await read_event(lines) == ("text", {"content": "Hello"})
    await asyncio.wait_for(held_model.hung_up.wait(), 20)  # a deadline only: noticed at the next heartbeat
    assert held_model.last_sent is False
    calls = Calls(app.client, headers)
    second = [c for c in await calls.ok("get", "/ai/conversations") if c["id"] != done["conversationId"]]
    assert len(second) == 1
    messages = await calls.ok("get", f"/ai/conversations/{second[0]['id']}/messages")
    assert [(m["role"], m["content"]) for m in messages] == [("user", "and again")]
    # The server is not left with the stream: a new turn streams as before.
    held_model.reset()
    held_model.release.set()
    async with server.client.stream("POST", CHAT, json={"message": "once more", "stream": True},
                                    headers=headers) as resp:
        lines = resp.aiter_lines()
        events = [await read_event(lines) for _ in range(3)]
    assert [e for e, _ in events] == ["text", "text", "done"] and events[2][1]["message"] == "Hello world"
    # A hang-up is an ordinary end of a stream, not a failure: nothing at warning or above was
    # logged from it (no traceback, no "turn failed", no storm of write errors to a closed socket).
    loud = [(r.name, r.levelname, r.getMessage()[:120]) for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == []
