"""The ai plugin's own extension point (published through ``register_hookspecs``).

An extension adds a skill the copilot and the MCP server offer::

    from plugins.ai.api import Skill

    async def word_count(ctx, args):
        item = await ctx.items.read(ctx.items_context(), args["collection"], args["id"])
        return {"words": len(str(item.get("body") or "").split())}

    @hookimpl(optionalhook=True)
    def register_ai_skills(kernel):
        return [Skill("word_count", "Count the words of an item's body", word_count,
                      parameters={"type": "object", "required": ["collection", "id"],
                                  "properties": {"collection": {"type": "string"}, "id": {"type": "string"}},
                                  "additionalProperties": False},
                      capability="items:read")]

The ai plugin's built-in skills (``list_collections``, ``read_items``, ``delete_collection``
...) register through this hook in exactly this way (``skills.py``).
"""

from __future__ import annotations

from typing import Any

from kernel.hooks.hookspecs import hookspec


@hookspec
def register_ai_skills(kernel: Any) -> list[Any] | None:
    """Return the ``plugins.ai.api.Skill`` objects the plugin provides, or mappings of their
    fields (``{"name": ..., "description": ..., "run": ...}``): a plugin that does not require ai
    imports nothing of it and returns mappings (files' ``import_file``, releases'
    ``publish_release``).

    Called when the app starts and again whenever the hook's implementations change (an
    extension loaded or unloaded). Names are unique across plugins: a second skill with a taken
    name stops the app at boot with a message naming both. Synchronous. A plugin that does not
    declare ``requires = ("ai",)`` marks its implementation ``@hookimpl(optionalhook=True)``.
    """
