"""``GET /realtime?ticket=...``: the WebSocket channel.

The kernel has already redeemed the ticket (site, principal; see ``tickets.redeem``), checked
the Origin, and accepted the socket. Here: a connection slot of the site (``limits``), one
topic subscription to the site's ``realtime.*`` (overflow ``drop``: a client that stops reading
is closed with 4408, never buffered without bound), and two loops: frames from the client
(``subscribe``, ``unsubscribe``, ``ping``) and frames to it (``event``, ``notification``,
``ping`` when idle). One event gives a connection at most one frame, however many of its
subscriptions match.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from falcon.errors import PayloadTypeError

from kernel import ApiError
from kernel.base.jsoncodec import nul_path
from kernel.http.middleware import request_context
from kernel.messaging.topics import Lagged
from kernel.metrics.live import live_connection
from plugins.items import api as items_api
from plugins.realtime import frames
from plugins.realtime.tickets import ALL

NOTIFICATION_TOPIC = "realtime.notification"
USER_NOTIFICATION_PREFIX = NOTIFICATION_TOPIC + "."


def notification_topic(recipient: str | None) -> str:
    """The topic of a notification: the site's, or ``realtime.notification.<user id>`` for one
    meant for that user alone (read only by that user's connections, see ``Connection.wants``)."""
    return NOTIFICATION_TOPIC if recipient is None else USER_NOTIFICATION_PREFIX + recipient


# One subscription per socket, to every topic of its site: the items plugin's live topics
# (``items.<collection>``) and the notifications; ``wants`` keeps what the socket asked for.
TOPICS = "*"
MAX_FRAME_BYTES = 16 * 1024


class Connection:
    """One open socket: its ticket's reach, its subscriptions, and a lock for sends.

    ``reader`` (``items_api.LiveReach``) answers whether the socket's principal may read the item an
    event is about; None lets every event of a subscribed collection through (tests of the
    framing alone). ``user_id``: the user whose own notifications the socket hears."""

    def __init__(self, ws: Any, settings: Any, audience: str, collections: list[str],
                 reader: items_api.LiveReach | None = None, user_id: str | None = None) -> None:
        self.ws = ws
        self.reader = reader
        self.audience = audience
        # The topic of the notifications meant for this connection's user alone (None: no user).
        self.own_topic = None if user_id is None else notification_topic(user_id)
        self.every = ALL in collections
        self.collections = frozenset(collections)
        self.subs: dict[str, list[frames.Predicate]] = {}
        self.count = 0
        self.max_subs = settings.get("realtime_max_subscriptions")
        self.ping_every = float(settings.get("realtime_ping_seconds"))
        self.send_timeout = float(settings.get("realtime_send_timeout_seconds"))
        self.lock = asyncio.Lock()

    async def send(self, frame: dict[str, Any] | str) -> None:
        """Send one frame (a dict, or its JSON text); a client that does not take it within the
        timeout is dropped (4408). ``asyncio.timeout``, not ``wait_for``: no task per frame."""
        text = frame if isinstance(frame, str) else json.dumps(frame, separators=(",", ":"))
        try:
            async with self.lock, asyncio.timeout(self.send_timeout):
                await self.ws.send_text(text)
        except TimeoutError:
            raise ApiError(408, "CLIENT_TOO_SLOW", "The client did not read its frames in time") from None

    async def error(self, code: str, message: str, **extra: Any) -> None:
        await self.send({"type": "error", "code": code, "message": message, **extra})

    def may_read(self, collection: str) -> bool:
        return self.every or collection in self.collections

    # ------------------------------------------------------------------ client -> server
    async def read_loop(self) -> None:
        while True:
            try:
                text = await self.ws.receive_text()
            except PayloadTypeError:
                await self.error("VALIDATION_FAILED", "Frames are JSON text, not binary")
                continue
            if len(text) > MAX_FRAME_BYTES or len(text.encode()) > MAX_FRAME_BYTES:
                raise ApiError(413, "PAYLOAD_TOO_LARGE", f"A frame is at most {MAX_FRAME_BYTES} bytes")
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
                await self.error("VALIDATION_FAILED", "The frame is not valid JSON")
                continue
            where = nul_path(parsed) if "\\u0000" in text else None  # valid JSON has NUL only escaped
            if where is not None:  # read_json's rule for REST bodies, here for frames
                await self.error("VALIDATION_FAILED", "A string holds a NUL character (\\u0000)", path=where)
                continue
            try:
                frame = frames.parse_frame(parsed)
            except ApiError as err:
                await self.error(err.code, err.message, path=list(err.details[0].path or []))
                continue
            await self.handle(frame)

    async def handle(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == "ping":
            await self.send({"type": "pong"})
            return
        collection = frame["collection"]
        if kind == "unsubscribe":
            self.count -= len(self.subs.pop(collection, []))
            await self.send({"type": "unsubscribed", "collection": collection})
            return
        if not self.may_read(collection):
            await self.error("SUBSCRIBE_FORBIDDEN", f"The ticket does not cover the collection '{collection}'",
                             collection=collection)
            return
        if self.count >= self.max_subs:
            await self.error("TOO_MANY_SUBSCRIPTIONS", f"A connection holds at most {self.max_subs} subscriptions",
                             collection=collection)
            return
        self.subs.setdefault(collection, []).append(frame["match"])
        self.count += 1
        await self.send({"type": "subscribed", "collection": collection})

    # ------------------------------------------------------------------ server -> client
    async def write_loop(self, sub: Any) -> None:
        while True:
            try:
                async with asyncio.timeout(self.ping_every):
                    item = await sub.__anext__()
            except TimeoutError:
                await self.send(PING)
                continue
            except StopAsyncIteration:
                break
            if isinstance(item, Lagged):  # Redis reconnected: events may be lost; re-fetch
                await self.send({"type": "lagged"})
                continue
            if self.wants(item.topic, item.data) and (
                    self.reader is None or item.topic.startswith(NOTIFICATION_TOPIC)
                    or await self.reader.sees(item.data)):
                await self.send(frame_text(item))
        if sub.dropped:
            raise ApiError(408, "CLIENT_TOO_SLOW", "The client did not keep up with its events")

    def wants(self, topic: str, data: Any) -> bool:
        if topic == NOTIFICATION_TOPIC:  # every session of the site, studio and audience alike
            return True
        if topic.startswith(USER_NOTIFICATION_PREFIX):  # one user's: that user's sessions only
            return topic == self.own_topic
        # Item writes, editorial transitions (``editorial.<collection>``, action ``review``) and
        # dashboard writes (``dashboards.<id>``, collection ``svc_dashboards``; -- more43).
        if not topic.startswith(("items.", "editorial.", "dashboards.")) or not isinstance(data, dict):
            return False
        matchers = self.subs.get(data.get("collection"))
        if not matchers:
            return False
        event = {"collection": data["collection"], "action": data.get("action"), "itemId": data.get("itemId")}
        return any(match(event) for match in matchers)


PING = json.dumps({"type": "ping"})
_last: list[Any] = [None, ""]  # (message, its frame's text): every socket of a site sends the same text


def frame_text(message: Any) -> str:
    """The frame of a topic message as JSON text, built once per message for all sockets of the
    process (the memo holds the message itself, so identity cannot be confused)."""
    if _last[0] is message:
        return str(_last[1])
    data = message.data
    if message.topic == NOTIFICATION_TOPIC or message.topic.startswith(USER_NOTIFICATION_PREFIX):
        frame: dict[str, Any] = {"type": "notification", "notification": data}
    else:
        frame = {"type": "event", "collection": data["collection"], "action": data.get("action"),
                 "itemId": data.get("itemId"), "payload": None}
    text = json.dumps(frame, separators=(",", ":"))
    _last[0], _last[1] = message, text
    return text


class RealtimeSocket:
    """The WebSocket resource of ``/realtime``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_websocket(self, req: Any, ws: Any) -> None:
        ctx = request_context(req)
        info = getattr(req.context, "realtime", None)
        if info is None:
            raise ApiError.unauthenticated("Connect with ?ticket=<ticket> from POST /realtime/ticket")
        site_id = ctx.require_site()
        state = self.kernel.state["realtime"]
        conn_id = await state.limiter.admit(site_id)
        if conn_id is None:
            raise ApiError(429, "RATE_LIMITED",
                           f"At most {state.limiter.limit} concurrent realtime connections per site")
        try:
            conn = Connection(ws, self.kernel.settings, info["audience"], info["collections"],
                              items_api.LiveReach(self.kernel, site_id, ctx.principal), ctx.principal.user_id)
            size = self.kernel.settings.get("realtime_queue_size")
            with live_connection(self.kernel, "websocket"):
                async with self.kernel.topics.subscribe(site_id, TOPICS, queue_size=size, overflow="drop") as sub:
                    await run_both(conn.read_loop(), conn.write_loop(sub))
        finally:
            await state.limiter.release(site_id, conn_id)


async def run_both(*coros: Any) -> None:
    """Run the loops until one ends; cancel the other; raise what ended the first."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
