"""The model provider: any server speaking the OpenAI-compatible chat-completions protocol
with tool calls (``POST {SVC_AI_BASE_URL}/chat/completions``): OpenAI, Ollama's ``/v1``, vLLM,
llama.cpp's server.

The provider URL is the operator's (an environment setting, never a site admin's), so it may
be a loopback address (a local Ollama); it must still be ``http(s)``, and redirects are not
followed. The API key goes only in the ``Authorization`` header and is never logged or stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from kernel.base.errors import ApiError
from kernel.base.outbound import OutboundRefused
from kernel.base.outbound import client as outbound_client

if TYPE_CHECKING:
    import httpx

CLIENT_KEY = "ai.provider"


def parse_base_url(raw: str) -> str:
    """``SVC_AI_BASE_URL``: empty, or an ``http(s)`` URL without credentials (checked at boot)."""
    value = raw.strip()
    if value:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
            raise ValueError("expected an http(s) base URL without credentials, such as http://127.0.0.1:11434/v1")
    return value


def configured(kernel: Any) -> bool:
    return bool(kernel.settings.get("ai_base_url"))


def _client(kernel: Any) -> httpx.AsyncClient:
    import httpx

    timeout = httpx.Timeout(kernel.settings.get("ai_timeout"), connect=5.0)
    return outbound_client(kernel, CLIENT_KEY, timeout=timeout, max_connections=20, max_keepalive=5,
                           operator=True)  # SVC_AI_BASE_URL: the operator's own endpoint


def _failed(message: str) -> ApiError:
    return ApiError(502, "AI_PROVIDER_FAILED", f"The model provider failed: {message}"[:300])


async def complete(kernel: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One chat-completions round: the assistant message the model answers (``content`` and
    ``tool_calls``). 502 ``AI_PROVIDER_FAILED`` for an unreachable server, a non-2xx answer, an
    oversized or malformed body."""
    return (await complete_with_usage(kernel, messages, tools))[0]


def _request(kernel: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             stream: bool) -> tuple[str, dict[str, Any], dict[str, str]]:
    settings = kernel.settings
    url = str(settings.get("ai_base_url")).rstrip("/") + "/chat/completions"
    body: dict[str, Any] = {"model": settings.get("ai_model") or "default", "messages": messages}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    if stream:
        body["stream"] = True
    headers = {"Content-Type": "application/json",
               "Accept": "text/event-stream, application/json" if stream else "application/json"}
    key = settings.get("ai_api_key")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return url, body, headers


def _message_of(raw: bytes) -> tuple[dict[str, Any], Any]:
    """The assistant message and ``usage`` of a whole chat completion."""
    try:
        answer = orjson.loads(raw)
        message = answer["choices"][0]["message"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise _failed("the answer is not a chat completion") from None
    if not isinstance(message, dict):
        raise _failed("the answer is not a chat completion")
    return message, answer.get("usage")


def _tokens(usage: Any, raw_size: int, body: dict[str, Any]) -> int:
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        tokens = raw_size // 4 + len(orjson.dumps(body)) // 4
    return tokens


async def complete_with_usage(kernel: Any, messages: list[dict[str, Any]],
                              tools: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """``complete`` and the tokens the server reports it used (``usage.total_tokens``; when the
    server reports none, the body's size in bytes / 4, so a budget still counts)."""
    import httpx

    url, body, headers = _request(kernel, messages, tools, stream=False)
    limit = int(kernel.settings.get("ai_max_response_bytes"))
    try:
        async with _client(kernel).stream("POST", url, content=orjson.dumps(body), headers=headers) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise _failed(f"the answer is larger than {limit} bytes")
                chunks.append(chunk)
    except (httpx.HTTPError, OutboundRefused) as exc:
        raise _failed(type(exc).__name__) from None
    if not 200 <= response.status_code < 300:
        raise _failed(f"HTTP {response.status_code}")
    raw = b"".join(chunks)
    message, usage = _message_of(raw)
    return message, _tokens(usage, len(raw), body)


class _Merged:
    """The assistant message a stream of ``chat.completion.chunk`` deltas builds."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None

    def add(self, chunk: Any) -> str | None:
        """Merge one chunk; the text it adds, if any."""
        if not isinstance(chunk, dict):
            raise _failed("a stream event is not a completion chunk")
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return None
        delta = choices[0].get("delta") if isinstance(choices[0].get("delta"), dict) else {}
        for part in delta.get("tool_calls") or []:
            if not isinstance(part, dict):
                continue
            index = part.get("index") if isinstance(part.get("index"), int) else len(self.calls)
            call = self.calls.setdefault(index, {"id": "", "type": "function",
                                                 "function": {"name": "", "arguments": ""}})
            call["id"] = part.get("id") or call["id"]
            function = part.get("function") if isinstance(part.get("function"), dict) else {}
            call["function"]["name"] += function.get("name") or ""
            call["function"]["arguments"] += function.get("arguments") or ""
        text = delta.get("content")
        if isinstance(text, str) and text:
            self.content.append(text)
            return text
        return None

    def message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.calls:
            out["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return out


async def complete_streaming(kernel: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                             on_text: Callable[[str], Awaitable[None]]) -> dict[str, Any]:
    """One round asked with ``stream: true``: each piece of text the model sends is passed to
    ``on_text`` as it arrives (Server-Sent Events ``data:`` lines of completion chunks, up to
    ``data: [DONE]``); returns the whole assistant message. A server that answers one JSON
    completion instead is read as ``complete`` reads it (its text passed on at once)."""
    import httpx

    url, body, headers = _request(kernel, messages, tools, stream=True)
    limit = int(kernel.settings.get("ai_max_response_bytes"))
    merged = _Merged()
    whole: list[bytes] = []
    size = 0
    try:
        async with _client(kernel).stream("POST", url, content=orjson.dumps(body), headers=headers) as response:
            if not 200 <= response.status_code < 300:
                raise _failed(f"HTTP {response.status_code}")
            streamed = response.headers.get("content-type", "").startswith("text/event-stream")
            async for line in response.aiter_lines():
                size += len(line) + 1
                if size > limit:
                    raise _failed(f"the answer is larger than {limit} bytes")
                if not streamed:
                    whole.append(line.encode())
                    continue
                if not line.startswith("data:"):
                    continue  # comments, event names, blank separators
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    chunk = orjson.loads(data)
                except orjson.JSONDecodeError:
                    raise _failed("a stream event is not JSON") from None
                text = merged.add(chunk)
                if text:
                    await on_text(text)
    except (httpx.HTTPError, OutboundRefused) as exc:
        raise _failed(type(exc).__name__) from None
    if not streamed:
        message, _usage = _message_of(b"\n".join(whole))
        if isinstance(message.get("content"), str) and message["content"]:
            await on_text(message["content"])
        return message
    return merged.message()
