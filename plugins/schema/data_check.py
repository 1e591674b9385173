"""Which schema deletes would drop data: the ``schema.data_check`` bus filter.

Asked by the config import (its dry run's ``destructive`` list and the 409 ``DESTRUCTIVE_BLOCKED``
of an apply) and by ``DELETE /fields/:collection/:field`` and bundle applies, so each of them
calls the same field removal destructive.
"""

from __future__ import annotations

from typing import Any

from kernel.messaging.bus import EventContext

DATA_CHECK = "schema.data_check"


async def holding_data(kernel: Any, ctx: EventContext, deletes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The deletes among ``deletes`` whose collection or field holds data.

    Asked through the bus filter ``schema.data_check`` with ``{ siteId, targets: [{ collection,
    collectionId, field? }] }``: a handler (the items plugin) sets ``hasData: true`` on each
    target that holds data, in place or in a returned payload. Nobody answering means no data.
    """
    if not deletes:
        return []
    targets = [{k: d[k] for k in ("collection", "collectionId", "field") if k in d} for d in deletes]
    payload = {"siteId": ctx.site_id, "targets": targets}
    result = await kernel.bus.filter(DATA_CHECK, payload, ctx)
    answered = result.get("targets") if isinstance(result, dict) else None
    if not isinstance(answered, list) or len(answered) != len(targets):
        answered = targets
    return [{**d, "hasData": True} for d, t in zip(deletes, answered, strict=True)
            if isinstance(t, dict) and t.get("hasData") is True]
