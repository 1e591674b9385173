"""The operations registry: what every plugin returned from ``register_flow_operations``."""

from __future__ import annotations

from typing import Any

from plugins.flows.api import Operation

STATE_KEY = "flows.operations"


def collect(kernel: Any) -> dict[str, Operation]:
    """Call the hook and index the operations by key; ValueError on a duplicate or a stranger."""
    found: dict[str, Operation] = {}
    owners: dict[str, str] = {}
    hook = kernel.pm.hook.register_flow_operations
    for impl in hook.get_hookimpls():
        result = impl.function(kernel=kernel)
        for op in result or ():
            if not isinstance(op, Operation):
                raise TypeError(f"register_flow_operations of {impl.plugin_name} must return Operation objects, "
                                f"got {op!r}")
            if op.key in found:
                raise ValueError(f"flow operation {op.key!r} is registered by both {owners[op.key]} and "
                                 f"{impl.plugin_name}")
            found[op.key] = op
            owners[op.key] = impl.plugin_name
    return found


def operations(kernel: Any) -> dict[str, Operation]:
    """The registered operations: collected again whenever the hook's implementations change
    (an extension loaded or unloaded), else from this process's cache."""
    impls = tuple((impl.plugin_name, id(impl.function)) for impl in
                  kernel.pm.hook.register_flow_operations.get_hookimpls())
    cached = kernel.state.get(STATE_KEY)
    if cached is None or cached[0] != impls:
        cached = kernel.state[STATE_KEY] = (impls, collect(kernel))
    return cached[1]


def refresh(kernel: Any) -> None:
    kernel.state.pop(STATE_KEY, None)


def listing(kernel: Any) -> list[dict[str, Any]]:
    """``GET /flows/operations``: ``[{ key, options, ... }]`` by key."""
    return [op.describe() for _, op in sorted(operations(kernel).items())]
