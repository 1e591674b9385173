"""svc kernel: the public surface for plugins.

Plugins import from here: ``hookimpl`` to implement hooks, ``Route`` to declare routes,
``ApiError`` to fail, the context types, the helpers for bodies and answers,
``SiteCacheSpec`` to declare a per-site cache and ``SecretError`` (``kernel.base.secrets``).

Each name is imported on first use (PEP 562): ``import kernel.cli`` must not load SQLAlchemy and
the bus, so that ``svc --help`` and ``svc --version`` answer at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kernel.version import __version__

if TYPE_CHECKING:
    from kernel.auth.principal import ANONYMOUS, Principal, TicketGrant
    from kernel.base.errors import ApiError
    from kernel.base.secrets import SecretError
    from kernel.base.settings import Setting
    from kernel.cache.sitecache import SiteCacheSpec
    from kernel.hooks.hookspecs import hookimpl
    from kernel.http.openapi import ops
    from kernel.http.ratelimit import RateBucket
    from kernel.http.routing import Route
    from kernel.messaging.bus import EventContext

_WHERE = {
    "ANONYMOUS": "kernel.auth.principal",
    "Principal": "kernel.auth.principal",
    "TicketGrant": "kernel.auth.principal",
    "EventContext": "kernel.messaging.bus",
    "ApiError": "kernel.base.errors",
    "hookimpl": "kernel.hooks.hookspecs",
    "RateBucket": "kernel.http.ratelimit",
    "Route": "kernel.http.routing",
    "ops": "kernel.http.openapi",
    "SecretError": "kernel.base.secrets",
    "Setting": "kernel.base.settings",
    "SiteCacheSpec": "kernel.cache.sitecache",
}

__all__ = [  # noqa: RUF022 - the names _WHERE maps, and the version
    "ANONYMOUS", "ApiError", "EventContext", "Principal", "RateBucket", "Route", "SecretError", "Setting",
    "SiteCacheSpec", "TicketGrant", "__version__", "hookimpl", "ops",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kernel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once imported, a plain attribute
    return value
