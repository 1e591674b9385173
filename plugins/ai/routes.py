"""Falcon resources of ``/ai`` (``chat.py``, ``approvals.py`` and ``conversations.py`` do the work)."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from kernel.http.sse import SSEvent, stream_events
from plugins.ai import gate
from plugins.ai.chat import approvals, chat, conversations
from plugins.ai.skill import SkillContext

STATUSES = ("pending", "approved", "rejected", "failed", "expired", "retrying", "running", "all")


def skill_context(req: Any) -> SkillContext:
    ctx = request_context(req)
    return SkillContext(ctx.kernel, ctx.require_site(), ctx.principal, ctx.request_id)


async def member_context(req: Any) -> SkillContext:
    """The caller's skill context; 403 for a signed-in principal holding no role in the site."""
    ctx = skill_context(req)
    if not (ctx.principal.is_admin or ctx.principal.role_id is not None):
        raise ApiError.forbidden("The copilot is for members of the site")
    return ctx


class ChatResource:
    """``POST /ai/chat``; streamed as Server-Sent Events on ``Accept: text/event-stream`` or
    ``"stream": true`` (``chat.chat_stream``)."""

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = await member_context(req)
        body = await read_json(req)
        if not chat.wants_stream(body, req.get_header("Accept")):
            status, data = await chat.chat(ctx, body)
            send_data(resp, data, status=status)
            return
        source = await chat.chat_stream(ctx, body)
        stream_events(req, resp, source, encode=lambda item: SSEvent(event=item[0], json=item[1]))


class SkillsResource:
    """``GET /ai/skills``: the skills offered to the caller."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = await member_context(req)
        send_data(resp, [s.listing() for s in await gate.offered(ctx)])


class ApprovalsResource:
    """``GET /ai/approvals`` (``?status=pending|approved|rejected|failed|expired|all``)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = await member_context(req)
        status = req.get_param("status")
        if status is not None and status not in STATUSES:
            raise ApiError.validation(f"'status' is one of {', '.join(STATUSES)}", path=["query", "status"])
        limit, offset = pagination(req, max_limit=200)
        data, total = await approvals.list_visible(ctx, status, limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class DecideResource:
    """``POST /ai/approvals/{id}/decide``."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = await member_context(req)
        send_data(resp, await approvals.decide(ctx, id, await read_json(req)))


class ConversationsResource:
    """``GET /ai/conversations``: the caller's own, most recent first."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = await member_context(req)
        limit, offset = pagination(req, max_limit=200)
        data, total = await conversations.list_page(ctx.kernel, ctx.site_id, gate.owner_of(ctx.principal),
                                                    limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class ConversationResource:
    """``DELETE /ai/conversations/{id}``."""

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        ctx = await member_context(req)
        await conversations.remove(ctx.kernel, ctx.site_id, gate.owner_of(ctx.principal), id)
        send_no_content(resp)


class MessagesResource:
    """``GET /ai/conversations/{id}/messages``: oldest first."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        ctx = await member_context(req)
        limit, offset = pagination(req, default_limit=100, max_limit=200)
        data, total = await conversations.list_messages(ctx.kernel, ctx.site_id, gate.owner_of(ctx.principal), id,
                                                        limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))
