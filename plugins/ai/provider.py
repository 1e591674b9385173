"""The model provider: any server speaking the OpenAI-compatible chat-completions protocol
with tool calls (``POST {SVC_AI_BASE_URL}/chat/completions``): OpenAI, Ollama's ``/v1``, vLLM,
llama.cpp's server.

The provider URL is the operator's (an environment setting, never a site admin's), so it may
be a loopback address (a local Ollama); it must still be ``http(s)``, and redirects are not
followed. The API key goes only in the ``Authorization`` header and is never logged or stored.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from kernel.errors import ApiError
from kernel.outbound import OutboundRefused
from kernel.outbound import client as outbound_client

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


async def complete_with_usage(kernel: Any, messages: list[dict[str, Any]],
                              tools: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """``complete`` and the tokens the server reports it used (``usage.total_tokens``; when the
    server reports none, the body's size in bytes / 4, so a budget still counts)."""
    settings = kernel.settings
    url = str(settings.get("ai_base_url")).rstrip("/") + "/chat/completions"
    body: dict[str, Any] = {"model": settings.get("ai_model") or "default", "messages": messages}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = settings.get("ai_api_key")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    limit = int(settings.get("ai_max_response_bytes"))
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
    try:
        raw = b"".join(chunks)
        answer = orjson.loads(raw)
        message = answer["choices"][0]["message"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise _failed("the answer is not a chat completion") from None
    if not isinstance(message, dict):
        raise _failed("the answer is not a chat completion")
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    tokens = usage.get("total_tokens")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        tokens = len(raw) // 4 + len(orjson.dumps(body)) // 4
    return message, tokens
