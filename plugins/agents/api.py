"""What other plugins may import from agents (declare ``requires = ("agents",)``). The git plugin
reaches the first two through its ``gitops_intents`` hook and incidents through ``git_ci_failed``
(plugin.py), without requiring agents.

- ``export_intents(ctx)``: the site's content intents in their JSON shape (gitops
  ``svc/intents.json``).
- ``import_intents(ctx, intents, source=...)``: upsert intents by their stable ``key``.
- ``record_incident(ctx, role=..., kind=..., detail=...)``: an incident in the trust ledger
  (may lower the role's autonomy, docs/decisions/agents.md).
"""

from __future__ import annotations

from typing import Any

from plugins.agents.goals import intents
from plugins.agents.governance import autonomy


async def export_intents(ctx: Any) -> list[dict[str, Any]]:
    """The site's intents, each ``{ key, title, description, role, trigger, budget, status }``."""
    return await intents.export(ctx)


async def import_intents(ctx: Any, given: list[dict[str, Any]], *, source: str) -> dict[str, list[str]]:
    """Upsert by ``key``: ``{ created, updated, unchanged }`` (lists of keys). 400
    ``VALIDATION_FAILED`` with the path (``[i].field``) for a bad intent; nothing is written then."""
    return await intents.import_many(ctx, given, source=source)


async def record_incident(ctx: Any, *, role: str, kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    """Record an incident (``kind`` one of ``staging_vetoed``, ``run_failed``,
    ``constitution_blocked``, ``ci_failed``) for ``role``; returns the incident."""
    return await autonomy.record_incident(ctx, role=role, kind=kind, detail=detail)


__all__ = ["export_intents", "import_intents", "record_incident"]
