"""word-count: an example svc extension with a route, an item hook and a flow operation.

- ``GET /api/v1/ext/word-count/articles/{id}``: the words of an article's ``body``, read through
  the items API as the caller (``items:articles`` must be granted).
- An item hook (bus filter on ``articles.items.create`` and ``.update``) that stores the count
  in the article's ``words`` field, in the same transaction as the write.
- The flow operation ``word-count`` (``{ text }`` -> ``{ words }``).
"""

from __future__ import annotations

from typing import Any

from extensions_sdk import (
    Operation,
    Option,
    OptionError,
    Route,
    hookimpl,
    items,
    ops,
    request_context,
    send_data,
)

from .counting import count_words


class ArticleWords:
    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        article = await items.read(request_context(req), "articles", id)
        send_data(resp, {"id": id, "words": count_words(article.get("body"))})


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    return [Route("/word-count/articles/{id}", ArticleWords(), auth="bearer",
                  openapi=ops(get=("Words of an article's body", None, {"type": "object"}, 200)))]


async def store_count(event: str, payload: dict[str, Any], ctx: Any) -> dict[str, Any]:
    after = payload.get("after")
    if isinstance(after, dict) and "body" in after:
        after["words"] = count_words(after.get("body"))
    return payload


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    bus.on_filter("articles.items.create", store_count)
    bus.on_filter("articles.items.update", store_count)


async def run_count(ctx: Any, options: dict[str, Any]) -> dict[str, Any]:
    return {"words": count_words(options.get("text"))}


def check(options: dict[str, Any]) -> None:
    if not isinstance(options.get("text"), str):
        raise OptionError("text", "'text' must be a string")


@hookimpl
def register_flow_operations(kernel: Any) -> list[Any]:
    return [Operation("word-count", run_count, validate=check, description="Count the words of a text.",
                      options={"text": Option("template", required=True, label="Text")})]
