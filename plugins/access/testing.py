"""The access plugin's test support, a pytest plugin (entry point ``svc_access`` in the ``pytest11``
group, beside the kernel's ``svc``): granting rules through ``/policies`` (``calls.grant``). The
kernel's harness (``kernel.testing``) knows no plugin's routes; ``harness_helper`` adds these to
its classes.
"""

from __future__ import annotations

import uuid
from typing import Any

from kernel.testing import Calls, harness_helper


@harness_helper(Calls)
async def grant(calls: Calls, rules: list[dict[str, Any]], attach: dict[str, str]) -> str:
    """A new policy holding ``rules`` (permission bodies), attached to ``attach`` (``{"roleId"}``,
    ``{"userId"}`` or ``{"teamId"}``); returns its id."""
    policy = await calls.ok("post", "/policies", status=201, json={"name": f"p-{uuid.uuid4().hex[:8]}"})
    for rule in rules:
        await calls.ok("post", f"/policies/{policy['id']}/permissions", status=201, json=rule)
    await calls.ok("post", f"/policies/{policy['id']}/attach", status=201, json=attach)
    return policy["id"]
