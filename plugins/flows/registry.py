"""The operations registry: what every plugin returned from ``register_flow_operations``."""

from __future__ import annotations

from typing import Any

from kernel.hooks.plugins import registrations
from plugins.flows.api import Operation


def operations(kernel: Any) -> dict[str, Operation]:
    """The registered operations by key: collected again whenever the hook's implementations
    change (an extension loaded or unloaded), else from this process's cache."""
    return registrations(kernel, "register_flow_operations", Operation, "key", "flow operation")


def refresh(kernel: Any) -> None:
    kernel.state.pop("registrations.register_flow_operations", None)


def listing(kernel: Any) -> list[dict[str, Any]]:
    """``GET /flows/operations``: ``[{ key, options, ... }]`` by key."""
    return [op.describe() for _, op in sorted(operations(kernel).items())]
