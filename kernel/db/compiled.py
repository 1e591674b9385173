"""One cache of compiled SQL for every engine of a process, when asked for (the test harness).

SQLAlchemy keeps a statement's compiled form per engine, keyed by the engine's dialect object.
The test harness builds an app, so an engine, for nearly every test, and each compiled the
statements it ran afresh: about 7 ms of CPU a test on SQLite and 10 ms on PostgreSQL, an eighth
of a test on ``calls``. After ``share()``, every engine a ``Database`` builds in this process
uses one cache, keyed by what the compiled SQL depends on in a dialect instead of its identity:
its class, the server's version, its settings (every plain value it holds) and its JSON
codecs. Two engines on one server compile alike, so they find each other's statements.

Production builds one engine per process and never calls ``share()``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.util import LRUCache

# Statements of the whole suite, not of one app: SQLAlchemy's own default per engine is 500.
SIZE = 3000
_SIGNATURE = "_svc_compile_signature"
_PLAIN = (str, int, float, bool, type(None), tuple)


def _signature(dialect: Any) -> Any:
    """What in ``dialect`` its compiled SQL depends on; kept on it once it has met its server."""
    known = dialect.__dict__.get(_SIGNATURE)
    if known is not None:
        return known
    plain = tuple(sorted((name, value) for name, value in vars(dialect).items() if isinstance(value, _PLAIN)))
    made = (
        type(dialect),
        plain,
        dialect.__dict__.get("_json_serializer"),
        dialect.__dict__.get("_json_deserializer"),
    )
    if dialect.server_version_info is not None:  # initialised: nothing in it changes any more
        setattr(dialect, _SIGNATURE, made)
    return made


class SharedCompiledCache:
    """SQLAlchemy's compiled cache (``get`` and item assignment), its keys' dialect replaced by
    that dialect's signature."""

    def __init__(self, size: int = SIZE) -> None:
        self._lru: LRUCache[Any, Any] = LRUCache(size)

    def get(self, key: tuple[Any, ...], default: Any = None) -> Any:
        return self._lru.get((_signature(key[0]), *key[1:]), default)

    def __setitem__(self, key: tuple[Any, ...], value: Any) -> None:
        self._lru[(_signature(key[0]), *key[1:])] = value

    def __len__(self) -> int:
        return len(self._lru)

    def clear(self) -> None:
        self._lru.clear()


_SHARED: SharedCompiledCache | None = None


def share() -> None:
    """From now on, every engine a ``Database`` of this process builds uses one compiled cache."""
    global _SHARED
    if _SHARED is None:
        _SHARED = SharedCompiledCache()


def shared_cache() -> SharedCompiledCache | None:
    """The process's shared cache, or None when ``share()`` was not called (production)."""
    return _SHARED
