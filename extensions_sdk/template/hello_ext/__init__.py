"""A template svc extension: one route answering a greeting. ``svc-ext new`` copies this folder.

Uploaded and enabled in a site, the route answers at ``/api/v1/ext/hello-ext`` for that site
(extension routes live under ``/<extension name>``, and every one needs a site). See
docs/extensions.md for the other hooks an extension may implement (item hooks, flow operations,
jobs) and the capabilities they need in manifest.json. The server runs this code in a confined
process of its own: reach data only through ``extensions_sdk`` (``items``, ``outbound``).
"""

from __future__ import annotations

from typing import Any

from extensions_sdk import Route, hookimpl, ops

name = "hello-ext"


class Hello:
    async def on_get(self, req: Any, resp: Any) -> None:
        resp.media = {"data": {"message": "hello from an extension"}}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    return [Route("/hello-ext", Hello(), auth="public",
                  openapi=ops(get=("Greeting from the template extension", None,
                                   {"type": "object", "properties": {"message": {"type": "string"}}}, 200)))]
