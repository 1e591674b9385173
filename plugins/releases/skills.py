"""The AI skill releases contributes (``register_ai_skills``, plugin.py): ``publish_release``.

Given as a mapping of ``plugins.ai.api.Skill``'s fields, so releases imports nothing of ai and
does not require it; the ai plugin makes the ``Skill`` (``kernel.hooks.plugins.registrations``). It is
dangerous: a call waits for an approver, then publishes as the caller (``api.publish``).
"""

from __future__ import annotations

from typing import Any

from plugins.releases import api


async def publish_release(ctx: Any, args: dict[str, Any]) -> Any:
    return await api.publish(ctx.items_context(), args["id"])


def ai_skills() -> list[dict[str, Any]]:
    return [{
        "name": "publish_release", "description": "Publish a release now.", "run": publish_release,
        "dangerous": True, "capability": "studio", "summary": lambda a: f"Publish release '{a['id']}'",
        "parameters": {"type": "object", "required": ["id"], "additionalProperties": False,
                       "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 200}}},
    }]
