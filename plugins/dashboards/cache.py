"""The brief cache of panel answers in the kernel cache (``kernel.cache``: memory or Redis).

Key: ``dashboards:panel:<site>:<panel>:<query digest>:<access fingerprint>:<generations>``.

- **Access fingerprint**: a digest of the caller's access snapshot (its rules, with the caller's
  identity where a rule uses ``$CURRENT_USER``/``$CURRENT_ROLE(S)``), or ``admin``. Callers whose
  rules are the same share answers; a caller with fewer permissions has another fingerprint, so
  it can never read a richer cached answer. A rule using ``$NOW`` turns the cache off for that
  caller (its answer changes by the second).
- **Generations**: a counter per (site, collection) and one per site, bumped by every item
  write and schema change of the site (bus actions ``items.*``, ``collections.*``, ``fields.*``,
  ``relations.*``; by the writing process when the cache is shared (Redis), by every process
  when each has its own; a bump too many only costs a miss). A write moves the counter, so the next call reads afresh. A query that
  may cross relations (a dotted or nested key in its filter or in the caller's read condition)
  also keys on the site's counter.
- **TTL** ``SVC_DASHBOARDS_CACHE_TTL`` seconds (default 30, ``0`` turns the cache off) bounds
  staleness where an action is lost (a process dying between commit and action).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kernel.policy.filtergrammar import OPERATORS
from plugins.dashboards.bodies import PanelQuery

TTL_SETTING = "dashboards_cache_ttl"
PREFIX = "dashboards:"
SITE_WIDE = "*"
INVALIDATING = ("items.*", "collections.*", "fields.*", "relations.*")


def ttl(kernel: Any) -> float:
    return float(kernel.settings.get(TTL_SETTING))


def parse_ttl(raw: str) -> float:
    value = float(raw)
    if not 0 <= value <= 3600:
        raise ValueError("expected 0 to 3600 seconds")
    return value


def generation_key(site_id: str, collection: str) -> str:
    return f"{PREFIX}gen:{site_id}:{collection}"


async def fingerprint(ctx: Any, site_id: str) -> str | None:
    """The caller's access fingerprint, or ``None`` when its answers must not be cached."""
    access = ctx.kernel.access
    if access is None:
        return "open"
    snap = await access.snapshot(ctx.principal, site_id)
    if snap.admin:
        return "admin"
    # What the rules grant, not which policy holds them: callers with equal grants share answers.
    text = "\n".join(sorted({repr((r.collection, r.action, r.fields, r.conditions)) for r in snap.rules}))
    if "$NOW" in text:
        return None
    if "$CURRENT" in text:
        text += f"\nuser={ctx.principal.user_id}\nrole={snap.role_id}\nroles={snap.role_ids}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _crosses(tree: Any) -> bool:
    """Whether a filter may name a related collection: a dotted key, or a key whose object holds
    anything but operators (fields, or ``_and``/``_or`` of fields)."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key in ("_and", "_or"):
                if any(_crosses(sub) for sub in value):
                    return True
            elif "." in key or (isinstance(value, dict) and any(k not in OPERATORS for k in value)):
                return True
    return False


async def key_for(ctx: Any, site_id: str, panel_id: str, q: PanelQuery) -> str | None:
    """The cache key of this caller's answer of a stored panel, or ``None``: no caching."""
    if ttl(ctx.kernel) <= 0:
        return None
    fp = await fingerprint(ctx, site_id)
    if fp is None:
        return None
    cache = ctx.kernel.cache
    row_filter = (await ctx.kernel.access.decide(ctx.principal, site_id, q.collection, "read")).row_filter \
        if fp != "admin" and ctx.kernel.access is not None else None
    names = [q.collection] + ([SITE_WIDE] if _crosses(q.filter) or _crosses(row_filter) else [])
    generations = [await cache.get(generation_key(site_id, n)) or "0" for n in names]
    digest = hashlib.sha256(json.dumps(q.to_json(), sort_keys=True).encode()).hexdigest()[:24]
    return f"{PREFIX}panel:{site_id}:{panel_id}:{digest}:{fp}:{'.'.join(generations)}"


def on_change(kernel: Any) -> Any:
    """The bus action handler bumping the generations of the site and collection written."""
    async def bump(event: str, payload: Any, ctx: Any) -> None:
        if getattr(ctx, "remote", False) and kernel.cache.shared:
            return  # the writing process bumped the counters every process reads
        site_id = getattr(ctx, "site_id", None)
        if site_id is None and isinstance(payload, dict):
            site_id = payload.get("siteId")
        if not isinstance(site_id, str):
            return
        collection = payload.get("collection") if isinstance(payload, dict) else None
        keys = [generation_key(site_id, SITE_WIDE)]
        if isinstance(collection, str) and collection:
            keys.append(generation_key(site_id, collection))
        await kernel.cache.bump(*keys)

    return bump
