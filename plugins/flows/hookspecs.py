"""The flows plugin's own extension point (published through ``register_hookspecs``).

An extension adds an operation that flows can use::

    from plugins.flows.api import Operation, OptionError

    async def shout(ctx, options):
        return {"text": str(options["text"]).upper()}

    def check(options):
        if not isinstance(options.get("text"), str):
            raise OptionError("text", "'text' must be a string")

    @hookimpl(optionalhook=True)
    def register_flow_operations(kernel):
        return [Operation("shout", shout, options={"text": "string (template)"}, validate=check)]

The flows plugin's own operations (``log``, ``request``, ``item-create`` ...) register through
this hook in exactly this way (``builtins.py``).
"""

from __future__ import annotations

from typing import Any

from kernel.hookspecs import hookspec


@hookspec
def register_flow_operations(kernel: Any) -> list[Any] | None:
    """Return the ``plugins.flows.api.Operation`` objects the plugin provides.

    Called once when the app starts (and again when an extension is loaded or unloaded, so the
    registry follows what is installed). Keys are unique across plugins: a second operation
    with a taken key stops the app at boot with a message naming both. Synchronous.
    A plugin that does not declare ``requires = ("flows",)`` marks its implementation
    ``@hookimpl(optionalhook=True)`` so the deployment still starts with flows disabled.
    """
