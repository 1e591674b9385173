"""The schema plugin's test support, a pytest plugin (entry point ``svc_schema`` in the ``pytest11``
group, beside the kernel's ``svc``): collections, fields and relations through their routes
(``calls.collection``, ``calls.field``, ``calls.relation``). The kernel's harness
(``kernel.testing``) knows no plugin's routes; ``harness_helper`` adds these to its classes.
"""

from __future__ import annotations

from typing import Any

from kernel.testing import Calls, harness_helper


@harness_helper(Calls)
async def collection(
    calls: Calls, name: str, fields: dict[str, Any] | None = None, **body: Any
) -> dict[str, Any]:
    """Create a collection with its ``fields`` (``name: type`` or ``name: {type, ...}``), in one
    request (the body's inline ``fields``, as Directus clients send them)."""
    inline = [
        {"field": field, **({"type": spec} if isinstance(spec, str) else spec)}
        for field, spec in (fields or {}).items()
    ]
    if inline:
        body = {**body, "fields": inline}
    return await calls.ok("post", "/collections", status=201, json={"name": name, **body})


@harness_helper(Calls)
async def field(calls: Calls, collection: str, field: str, type_: str, **body: Any) -> dict[str, Any]:
    """Create one field of ``collection``."""
    return await calls.ok(
        "post", f"/fields/{collection}", status=201, json={"field": field, "type": type_, **body}
    )


@harness_helper(Calls)
async def relation(calls: Calls, **body: Any) -> dict[str, Any]:
    """Create a relation from the body's keys."""
    return await calls.ok("post", "/relations", status=201, json=body)
