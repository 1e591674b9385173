"""Conversations and their messages: per site and owner (a user or an API key), visible only
to their owner. A message keeps the model's raw output (``raw``) with the skill call it
produced (``skill``, ``arguments``, ``result`` or ``approvalId``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import delete, func, or_

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.policy.privacy import delete_in_batches, rows_before
from kernel.tenancy.scope import SiteDB
from plugins.ai.tables import conversations, messages

HISTORY = 20  # earlier messages a model sees of its conversation


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "title": row["title"], "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"])}


def message_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "role": row["role"], "content": row["content"], "skill": row["skill"],
            "arguments": row["arguments"], "result": row["result"], "raw": row["raw"],
            "approvalId": row["approval_id"], "createdAt": iso(row["created_at"])}


def _missing() -> ApiError:
    return ApiError.not_found("Conversation not found")


async def owned(kernel: Any, site_id: str, owner: str, conversation_id: Any) -> Any:
    """The conversation row if ``owner`` owns it in ``site_id``; else 404 (never 403: another's
    conversation does not exist for the caller)."""
    if not isinstance(conversation_id, str) or not conversation_id or len(conversation_id) > 36 \
            or "\x00" in conversation_id:  # PostgreSQL refuses NUL in text
        raise _missing()
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(conversations).where(conversations.c.id == conversation_id,
                                                          conversations.c.owner == owner))
    if row is None:
        raise _missing()
    return row


async def start(kernel: Any, site_id: str, owner: str, title: str) -> str:
    conversation_id = uuid7()
    now = now_utc()
    async with kernel.unit_of_work(site_id) as uow:
        await uow.db.insert(conversations, {"id": conversation_id, "owner": owner, "title": title[:200],
                                            "created_at": now, "updated_at": now})
    return conversation_id


async def append(kernel: Any, site_id: str, conversation_id: str, role: str, *, content: str | None = None,
                 skill: str | None = None, arguments: Any = None, result: Any = None, raw: Any = None,
                 approval_id: str | None = None) -> None:
    """Add one message at the end of the conversation."""
    now = now_utc()
    async with kernel.unit_of_work(site_id) as uow:
        db = uow.db
        last = await db.scalar(db.select(messages, func.max(messages.c.seq))
                               .where(messages.c.conversation_id == conversation_id))
        await db.insert(messages, {"id": uuid7(), "conversation_id": conversation_id, "seq": (last or 0) + 1,
                                   "role": role, "content": content, "skill": skill, "arguments": arguments,
                                   "result": result, "raw": raw, "approval_id": approval_id, "created_at": now})
        await db.execute(db.update(conversations).where(conversations.c.id == conversation_id)
                         .values(updated_at=now))


async def history(kernel: Any, site_id: str, conversation_id: str) -> list[dict[str, str]]:
    """The last user and assistant texts, oldest first, as chat-completions messages."""
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        rows = await db.all(db.select(messages).where(messages.c.conversation_id == conversation_id,
                                                      messages.c.role.in_(("user", "assistant")),
                                                      messages.c.content.is_not(None))
                            .order_by(messages.c.seq.desc()).limit(HISTORY))
    return [{"role": r["role"], "content": r["content"]} for r in reversed(rows)]


async def list_page(kernel: Any, site_id: str, owner: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        where = conversations.c.owner == owner
        total = await db.scalar(db.select(conversations, func.count()).where(where))
        rows = await db.all(db.select(conversations).where(where)
                            .order_by(conversations.c.updated_at.desc(), conversations.c.id.desc())
                            .limit(limit).offset(offset))
    return [record(r) for r in rows], int(total or 0)


async def list_messages(kernel: Any, site_id: str, owner: str, conversation_id: str, limit: int,
                        offset: int) -> tuple[list[dict[str, Any]], int]:
    await owned(kernel, site_id, owner, conversation_id)
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        where = messages.c.conversation_id == conversation_id
        total = await db.scalar(db.select(messages, func.count()).where(where))
        rows = await db.all(db.select(messages).where(where).order_by(messages.c.seq).limit(limit).offset(offset))
    return [message_record(r) for r in rows], int(total or 0)


async def remove(kernel: Any, site_id: str, owner: str, conversation_id: str) -> None:
    await owned(kernel, site_id, owner, conversation_id)
    async with kernel.unit_of_work(site_id) as uow:
        await uow.db.execute(uow.db.delete(messages).where(messages.c.conversation_id == conversation_id))
        await uow.db.execute(uow.db.delete(conversations).where(conversations.c.id == conversation_id))


async def prune_site(kernel: Any, site_id: str, before: dt.datetime) -> int:
    """Delete the site's conversations (and their messages) last touched before ``before``; how
    many went. The privacy plugin's retention target ``aiConversations`` calls this."""
    async with kernel.unit_of_work(site_id) as uow:
        db = uow.db
        old = db.select(conversations, conversations.c.id).where(conversations.c.updated_at < before)
        await db.execute(db.delete(messages).where(messages.c.conversation_id.in_(old)))
        result = await db.execute(db.delete(conversations).where(conversations.c.updated_at < before))
    return int(result.rowcount or 0)


# The sites with a conversation last touched before the horizon: the ``aiConversations``
# target's ``pending`` (one query across sites).
pending_sites = rows_before(conversations, conversations.c.updated_at)


async def purge(kernel: Any) -> int:
    """The retention job: drop conversations untouched for ``SVC_AI_CONVERSATION_RETENTION_DAYS``
    (in every site; messages go with them)."""
    cutoff = now_utc() - dt.timedelta(days=int(kernel.settings.get("ai_conversation_retention_days")))

    async def their_messages(conn: Any, ids: list[Any]) -> None:
        await conn.execute(delete(messages).where(messages.c.conversation_id.in_(ids)))

    # Across sites (one horizon for all), in bounded batches: a conversation's messages go in
    # its batch's transaction, just before it.
    return await delete_in_batches(kernel, conversations, conversations.c.updated_at < cutoff, chunk=200,
                                   before_delete=their_messages)


async def erase_subject(uow: Any, subject: Any) -> int:
    """The erasure target ``aiConversations``: the subject's conversations and every one with a
    title or message quoting them go whole (a conversation without one of its turns would
    misread); how many conversations went."""
    from kernel.policy.privacy import holding

    db = uow.db
    m = messages
    quoted = db.select(m, m.c.conversation_id).where(holding([m.c.content, m.c.arguments, m.c.result, m.c.raw],
                                                             subject))
    cond = or_(holding([conversations.c.title], subject), conversations.c.id.in_(quoted))
    if subject.user_ids:
        cond = or_(cond, conversations.c.owner.in_(subject.owners))
    ids = [r["id"] for r in await db.all(db.select(conversations, conversations.c.id).where(cond))]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        await db.execute(db.delete(m).where(m.c.conversation_id.in_(chunk)))
        await db.execute(db.delete(conversations).where(conversations.c.id.in_(chunk)))
    return len(ids)
