"""One beacon: its body, whether it counts (privacy signals, bots), and who the visitor is.

The visitor of an anonymous hit is ``sha256(salt, ip, user agent, site, day)`` cut to 32 hex
characters, where the salt is the site's salt of that day: random and deleted after a day
unless the ``pageviews`` setting names a ``hashSalt`` (then ``HMAC(hashSalt, site|day)``). The
IP is used for that hash and the per-IP rate limit only; it is never stored or logged.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from crawlerdetect import CrawlerDetect
from sqlalchemy import and_, select

from kernel import ApiError
from kernel.base.jsoncodec import loads, lone_surrogate_path
from plugins.pageviews.tables import salts

MAX_PATH = 512
MAX_REFERRER = 2048
MAX_BODY = 4096


@dataclass(frozen=True)
class Hit:
    path: str
    referrer: str | None


def parse(raw: bytes) -> Hit:
    """``{ path, referrer? }`` (sendBeacon posts it as text/plain; any type is read as JSON)."""
    if len(raw) > MAX_BODY:
        raise ApiError(413, "PAYLOAD_TOO_LARGE", f"A beacon is at most {MAX_BODY} bytes")
    try:
        body = loads(raw) if raw.strip() else None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ApiError.validation("The beacon is not valid JSON", path=["body"]) from exc
    if not isinstance(body, dict):
        raise ApiError.validation("The beacon must be a JSON object { path, referrer? }", path=["body"])
    where = lone_surrogate_path(body)
    if where is not None:  # not text: it could never be stored (the flush would fail on it)
        raise ApiError.validation("The beacon holds a lone surrogate, which is not text", path=where or ["body"])
    unknown = sorted(set(body) - {"path", "referrer"})
    if unknown:
        raise ApiError.validation(f"Unknown field '{unknown[0][:40]}'", path=[unknown[0][:40]])
    path = body.get("path")
    if not isinstance(path, str) or not path.startswith("/") or len(path) > MAX_PATH:
        raise ApiError.validation(f"'path' must be a string starting with / of at most {MAX_PATH} characters",
                                  path=["path"])
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise ApiError.validation("'path' must not hold control characters", path=["path"])
    referrer = body.get("referrer")
    if referrer is not None and (not isinstance(referrer, str) or len(referrer) > MAX_REFERRER):
        raise ApiError.validation(f"'referrer' must be a string of at most {MAX_REFERRER} characters",
                                  path=["referrer"])
    # The query string and fragment are not part of the page (and may carry personal data).
    return Hit(path.split("?", 1)[0].split("#", 1)[0] or "/", referrer)


def refuses_tracking(req: Any) -> bool:
    """``DNT: 1`` or ``Sec-GPC: 1``: the visitor asked not to be tracked; the hit is not counted."""
    return (req.get_header("DNT") or "").strip() == "1" or (req.get_header("Sec-GPC") or "").strip() == "1"


class BotFilter:
    """crawlerdetect's maintained user-agent patterns; an empty user agent is a bot too."""

    def __init__(self) -> None:
        self._detector = CrawlerDetect()

    def is_bot(self, user_agent: str | None) -> bool:
        if not user_agent or not user_agent.strip():
            return True
        return bool(self._detector.isCrawler(user_agent[:1000]))


class Salts:
    """The salt of (site, day), kept in memory for today and yesterday."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], str] = {}

    async def salt(self, kernel: Any, site_id: str, day: str, configured: str | None) -> str:
        if configured:
            return hmac.new(configured.encode(), f"{site_id}|{day}".encode(), hashlib.sha256).hexdigest()
        known = self._known.get((site_id, day))
        if known is not None:
            return known
        where = and_(salts.c.site_id == site_id, salts.c.day == day)
        async with kernel.unit_of_work(site_id) as uow:
            found = (await uow.conn.execute(select(salts.c.salt).where(where))).scalar()
            if found is None:
                from plugins.pageviews.store import insert_ignore

                await insert_ignore(kernel, uow.conn, salts, [{"site_id": site_id, "day": day,
                                                               "salt": secrets.token_hex(32)}])
                found = (await uow.conn.execute(select(salts.c.salt).where(where))).scalar_one()
        for key in [k for k in self._known if k[1] < day]:
            del self._known[key]
        self._known[(site_id, day)] = found
        return found


def visitor_hash(salt: str, who: str, user_agent: str, site_id: str, day: str) -> str:
    """The salted daily hash of a visitor (``who``: the IP, or ``user:<id>`` when attributed)."""
    material = "\x00".join((salt, who, user_agent or "", site_id, day)).encode()
    return hashlib.sha256(material).hexdigest()[:32]
