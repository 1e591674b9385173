"""The AI skill files contributes (``register_ai_skills``, plugin.py): ``import_file``.

Given as a mapping of ``plugins.ai.api.Skill``'s fields, so files imports nothing of ai and does
not require it; the ai plugin makes the ``Skill`` (``kernel.hooks.plugins.registrations``). The skill
imports as the caller through ``api.import_url`` (the outbound-URL rule, the upload guard).
"""

from __future__ import annotations

from typing import Any

from plugins.files import api


async def import_file(ctx: Any, args: dict[str, Any]) -> Any:
    record, _created = await api.import_url(ctx.items_context(), args["url"], args.get("data"))
    return record


def ai_skills() -> list[dict[str, Any]]:
    return [{
        "name": "import_file", "description": "Import a file from a public http(s) URL into the file library.",
        "run": import_file, "capability": "studio", "untrusted": False,
        "parameters": {"type": "object", "required": ["url"], "additionalProperties": False, "properties": {
            "url": {"type": "string", "minLength": 1, "maxLength": 2048},
            "data": {"type": "object", "additionalProperties": True}}},
    }]
