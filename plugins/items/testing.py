"""The items plugin's test support, a pytest plugin (entry point ``svc_items`` in the ``pytest11``
group, beside the kernel's ``svc``): items through ``/items`` (``calls.create``, ``calls.get``,
``calls.list``). The kernel's harness (``kernel.testing``) knows no plugin's routes;
``harness_helper`` adds these to its classes.
"""

from __future__ import annotations

from typing import Any

from kernel.testing import Calls, harness_helper


@harness_helper(Calls)
async def create(calls: Calls, collection: str, body: Any, status: int = 201) -> Any:
    """Create an item (or a list of items) of ``collection``."""
    return await calls.ok("post", f"/items/{collection}", status=status, json=body)


@harness_helper(Calls)
async def get(calls: Calls, collection: str, item_id: str, **kw: Any) -> Any:
    """One item of ``collection``."""
    return await calls.ok("get", f"/items/{collection}/{item_id}", **kw)


@harness_helper(Calls)
async def list(calls: Calls, collection: str, **params: Any) -> Any:
    """The whole answer (``data`` and ``meta``) of listing ``collection`` with query ``params``."""
    return await calls.ok("get", f"/items/{collection}", full=True, params=params)
