"""A template svc extension: one route answering a greeting. Copy this folder to start."""

from __future__ import annotations

from typing import Any

from extensions_sdk import Route, hookimpl, ops

name = "hello-ext"


class Hello:
    async def on_get(self, req: Any, resp: Any) -> None:
        resp.media = {"data": {"message": "hello from an extension"}}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    return [Route("/hello-ext", Hello(), site="none", auth="public",
                  openapi=ops(get=("Greeting from the template extension", None,
                                   {"type": "object", "properties": {"message": {"type": "string"}}}, 200)))]
