"""The ``pageviews`` site setting (docs/delivery.md, The pageviews setting): declared here, validated,
and read through the settings plugin's cache (a change applies at once on every worker)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plugins.settings.api import get_setting

KEY = "pageviews"
STRATEGIES = ("db-rollup", "hot-counter", "cdc", "hll")
DEFAULT_FLUSH_S = 300  # the API's limit: the pageview counters flush every 5 minutes
FIELDS = frozenset({"strategy", "userTable", "respectConsent", "botFilter", "hashSalt", "flushIntervalS"})


@dataclass(frozen=True)
class PageviewConfig:
    strategy: str = "db-rollup"
    user_table: str | None = None
    respect_consent: bool = True
    bot_filter: bool = True
    hash_salt: str | None = None
    flush_interval_s: int = DEFAULT_FLUSH_S


def validate(value: Any) -> dict[str, Any]:
    """The setting's value: an object of the spec's fields (each optional), else ValueError."""
    if not isinstance(value, dict):
        raise ValueError("must be an object")
    unknown = sorted(set(value) - FIELDS)
    if unknown:
        raise ValueError(f"unknown field '{unknown[0]}' (known: {', '.join(sorted(FIELDS))})")
    if "strategy" in value and value["strategy"] not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}")
    for name in ("respectConsent", "botFilter"):
        if name in value and not isinstance(value[name], bool):
            raise ValueError(f"{name} must be true or false")
    salt = value.get("hashSalt")
    if salt is not None and (not isinstance(salt, str) or not 16 <= len(salt) <= 200):
        raise ValueError("hashSalt must be a string of 16 to 200 characters")
    table = value.get("userTable")
    if table is not None and (not isinstance(table, str) or not 0 < len(table) <= 64):
        raise ValueError("userTable must be a collection name")
    interval = value.get("flushIntervalS")
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int)
                                 or not 1 <= interval <= 86400):
        raise ValueError("flushIntervalS must be an integer from 1 to 86400")
    return dict(value)


async def site_config(kernel: Any, site_id: str) -> PageviewConfig:
    """The site's pageview configuration (defaults for what is not set)."""
    value = await get_setting(kernel, site_id, KEY, None) or {}
    return PageviewConfig(
        strategy=value.get("strategy", "db-rollup"),
        user_table=value.get("userTable"),
        respect_consent=value.get("respectConsent", True),
        bot_filter=value.get("botFilter", True),
        hash_salt=value.get("hashSalt"),
        flush_interval_s=value.get("flushIntervalS", DEFAULT_FLUSH_S),
    )
