"""What the extension that is running right now may do: a context variable the kernel checks.

An uploaded extension's code (its routes, bus handlers, jobs, flow operations) runs inside
``running(scope)``. The kernel and the items API ask ``current()`` before acting, so the limits
hold whatever the extension calls: items of a collection it was not granted (``items:<name>``)
are refused, and so is an outbound request without ``network``. Code that runs outside any
extension (every built-in feature) sees ``None`` and is not limited. Context variables follow
``await`` and the tasks an extension starts, and are restored when its call returns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from kernel.base.errors import ApiError


@dataclass(frozen=True)
class ExtensionScope:
    """One extension acting in one site with the capabilities that site granted it."""

    name: str
    site_id: str | None
    capabilities: frozenset[str]
    # What was refused while this scope ran (the extensions plugin tells a refusal from a veto).
    refusals: list[str] = field(default_factory=list, compare=False)

    def allows(self, capability: str) -> bool:
        return capability in self.capabilities

    def allows_collection(self, collection: str) -> bool:
        return f"items:{collection}" in self.capabilities


_ACTIVE: ContextVar[ExtensionScope | None] = ContextVar("svc_extension_scope", default=None)


def current() -> ExtensionScope | None:
    """The extension running in this task, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def running(scope: ExtensionScope) -> Iterator[ExtensionScope]:
    token = _ACTIVE.set(scope)
    try:
        yield scope
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def cleared() -> Iterator[None]:
    """Run the block as no extension: the bus calls every handler so, so that a built-in filter
    or action set off by an extension's write is not limited by that extension's grants (an
    extension's own handler sets its scope again)."""
    if _ACTIVE.get() is None:
        yield
        return
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def refusal(capability: str, what: str) -> ApiError:
    scope = current()
    name = scope.name if scope else "?"
    return ApiError.forbidden(f"Extension '{name}' was not granted '{capability}' ({what})",
                              reason="extension_capability", capability=capability)


def require(capability: str, what: str) -> None:
    """403 when an extension is running without ``capability``; nothing otherwise."""
    scope = current()
    if scope is not None and not scope.allows(capability):
        scope.refusals.append(capability)
        raise refusal(capability, what)


def collection_allowed(collection: str) -> bool:
    """False only when an extension is running and was not granted ``items:<collection>``."""
    scope = current()
    if scope is None or scope.allows_collection(collection):
        return True
    scope.refusals.append(f"items:{collection}")
    return False
