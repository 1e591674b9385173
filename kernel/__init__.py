"""svc kernel: the public surface for plugins.

Plugins import from here: ``hookimpl`` to implement hooks, ``Route`` to declare routes,
``ApiError`` to fail, the context types, the helpers for bodies and answers,
``SiteCacheSpec`` to declare a per-site cache and ``SecretError`` (``kernel.secrets``).
"""

from kernel.auth.principal import ANONYMOUS, Principal, TicketGrant  # noqa: E402
from kernel.bus import EventContext  # noqa: E402
from kernel.errors import ApiError  # noqa: E402
from kernel.hookspecs import hookimpl  # noqa: E402
from kernel.http.ratelimit import RateBucket  # noqa: E402
from kernel.http.routing import Route  # noqa: E402
from kernel.openapi import ops  # noqa: E402
from kernel.secrets import SecretError  # noqa: E402
from kernel.settings import Setting  # noqa: E402
from kernel.sitecache import SiteCacheSpec  # noqa: E402
from kernel.version import __version__  # noqa: E402

__all__ = [
    "ANONYMOUS",
    "ApiError",
    "EventContext",
    "Principal",
    "RateBucket",
    "Route",
    "SecretError",
    "Setting",
    "SiteCacheSpec",
    "TicketGrant",
    "__version__",
    "hookimpl",
    "ops",
]
