"""The caching headers of delivery answers (docs/delivery.md, HTTP caching)."""

from __future__ import annotations

from typing import Any

VARY = "X-Svc-Site"
NO_STORE = {"Cache-Control": "no-store"}


def is_private(req: Any) -> bool:
    """A request with credentials gets a private answer that no shared cache keeps."""
    return req.get_header("Authorization") is not None


def public_cache_control(settings: Any) -> str:
    """``public, s-maxage=…, stale-while-revalidate=…``; with ``SVC_DELIVER_SMAXAGE=0`` shared
    caches must revalidate every time (``no-cache``), which the ETag makes cheap."""
    smaxage = int(settings.get("deliver_smaxage"))
    if smaxage == 0:
        return "public, no-cache"
    return f"public, s-maxage={smaxage}, stale-while-revalidate={int(settings.get('deliver_swr'))}"


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether ``If-None-Match`` names ``tag`` (weak comparison, RFC 9110 13.1.2). ``*`` ("any
    representation exists") is not a match: the 304 is decided before the page is read, so it
    cannot know the page exists, and a missing page must stay a 404."""
    if not if_none_match:
        return False
    bare = tag[2:] if tag.startswith("W/") else tag
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if (candidate[2:] if candidate.startswith("W/") else candidate) == bare:
            return True
    return False


def set_public(resp: Any, settings: Any, tag: str) -> None:
    resp.set_header("Cache-Control", public_cache_control(settings))
    resp.set_header("ETag", tag)
    resp.set_header("Vary", VARY)


def set_private(resp: Any) -> None:
    resp.set_header("Cache-Control", "private, no-store")
    resp.set_header("Vary", VARY)


def not_modified(resp: Any) -> None:
    """304 with no body (the headers set before stay: ETag, Cache-Control, Vary)."""
    resp.status = 304
    resp.content_type = None
    resp.data = None
    resp.text = None


class ErrorsAreNotCached:
    """Falcon middleware: every error answer under ``/deliver/`` carries ``no-store`` and no
    ETag, also those the kernel's middleware raises before a responder runs (no site, unknown
    site, 429): a shared cache must never keep them."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def process_response(self, req: Any, resp: Any, resource: Any, req_succeeded: bool) -> None:
        if resp.status_code >= 400 and req.path.startswith(self.prefix):
            resp.set_header("Cache-Control", "no-store")
            resp.delete_header("ETag")
