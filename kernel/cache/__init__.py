"""The cache: one ``Cache`` interface, an in-process and a Redis backend.

``make_cache(settings)`` picks Redis when ``settings.redis_url`` is set (shared by every
worker; keys under ``<SVC_REDIS_NAMESPACE>:cache:``), behind a ``FallbackCache`` that serves from
an in-process LRU while Redis does not answer; otherwise an in-process LRU. The contract both pass is
``tests/cache/test_cache_contract.py``.
"""

from __future__ import annotations

from typing import Any

from kernel.cache.base import Cache
from kernel.cache.fallback import FallbackCache
from kernel.cache.memory import MemoryCache
from kernel.cache.redis_cache import REDIS_TIMEOUT, RedisCache, make_redis_client, redact_url

__all__ = ["Cache", "FallbackCache", "MemoryCache", "RedisCache", "make_cache", "make_redis_client", "redact_url"]


def make_cache(settings: Any, circuit: Any = None, writes: Any = None) -> Cache:
    """``RedisCache`` on ``settings.redis_url`` when set (in a ``FallbackCache`` on ``circuit``,
    ``kernel.redisio.redis_fallback.RedisCircuit``, sending its bumps through ``writes``,
    ``kernel.redisio.redis_writes.RedisWrites``), else a ``MemoryCache``."""
    url = (getattr(settings, "redis_url", "") or "").strip()
    if url:
        namespace = getattr(settings, "redis_namespace", "") or "svc"
        timeout = getattr(settings, "redis_timeout", REDIS_TIMEOUT)
        return FallbackCache(RedisCache(url, namespace=f"{namespace}:cache:", timeout=timeout), circuit=circuit,
                             writes=writes)
    return MemoryCache()
