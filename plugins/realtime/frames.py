"""Client frames of the realtime channel, checked; the subscription filter, compiled.

A ``subscribe`` frame is ``{ type: "subscribe", collection, filter? }``. The filter is a list
filter (the kernel's grammar: ``_and``/``_or``, ``_eq``, ``_in``, ``_contains`` ...) over the keys
of an event, ``collection``, ``action`` and ``itemId``, all strings; it compiles to a predicate
run on every event. ``unsubscribe`` (``{ type, collection }``) and ``ping`` are accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kernel import ApiError
from kernel.policy.filtergrammar import FilterGrammar

EVENT_KEYS = frozenset({"collection", "action", "itemId"})
ACTIONS = ("create", "update", "delete")
COLLECTION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")
FRAME_TYPES = ("subscribe", "unsubscribe", "ping")
# Operators that make no sense on a string key (JSON ones) are refused, not ignored.
UNSUPPORTED = frozenset({"_json_contains", "_has_key", "_has_any_keys", "_has_all_keys"})

Predicate = Callable[[dict[str, Any]], bool]


def _always(_event: dict[str, Any]) -> bool:
    return True


def _compare(op: str, have: Any, want: Any) -> bool:
    if have is None:
        return op in ("_neq", "_nin") or (op == "_null" and want is True) or (op == "_nnull" and want is False)
    if op == "_eq":
        return have == want
    if op == "_neq":
        return have != want
    if op == "_in":
        return have in want
    if op == "_nin":
        return have not in want
    if op == "_null":
        return want is False
    if op == "_nnull":
        return want is True
    text = str(want)
    if op == "_contains":
        return text in have
    if op == "_icontains":
        return text.lower() in have.lower()
    if op == "_starts_with":
        return have.startswith(text)
    if op == "_ends_with":
        return have.endswith(text)
    if not all(isinstance(v, str) for v in (want if op == "_between" else [want])):
        return False  # the keys are strings: a number never orders against them
    if op == "_between":
        return want[0] <= have <= want[1]
    return {"_lt": have < want, "_lte": have <= want, "_gt": have > want, "_gte": have >= want}[op]


class EventFilter(FilterGrammar):
    """The list-filter grammar over the three event keys, building a predicate."""

    subject = "The filter"
    noun = "filters"
    max_nodes = 100
    max_string = 200
    field_logic = frozenset()

    def nested(self, segments: list[str], value: dict[str, Any], path: list[Any], depth: int, scope: Any) -> Any:
        raise self.fail("An event key takes an object of operators", path)

    def leaf(self, segments: list[str], operators: dict[str, Any], path: list[Any], scope: Any) -> Predicate:
        key = ".".join(segments)
        if key not in EVENT_KEYS:
            raise self.fail(f"Unknown event key '{key[:40]}'; a filter names collection, action or itemId", path)
        for op in operators:
            if op in UNSUPPORTED:
                raise self.fail(f"'{op}' does not apply to '{key}', a string", [*path, op])
        checks = list(operators.items())
        return lambda event: all(_compare(op, event.get(key), want) for op, want in checks)

    def logical(self, key: str, kids: list[Predicate]) -> Predicate:
        if key == "_and":
            return lambda event: all(kid(event) for kid in kids)
        return lambda event: any(kid(event) for kid in kids)

    def combine(self, parts: list[Predicate]) -> Predicate:
        if len(parts) == 1:
            return parts[0]
        return lambda event: all(part(event) for part in parts)

    def compile(self, tree: Any) -> Predicate:
        if tree is None or tree == {}:
            return _always
        result: Predicate = self.group(tree, [], 1)
        return result


def parse_frame(frame: Any) -> dict[str, Any]:
    """A client frame, checked: ``{type, collection?, match?}`` (400 ``VALIDATION_FAILED``)."""
    if not isinstance(frame, dict):
        raise ApiError.validation("A frame is a JSON object", path=["frame"])
    kind = frame.get("type")
    if kind not in FRAME_TYPES:
        raise ApiError.validation(f"'type' is one of {', '.join(FRAME_TYPES)}", path=["type"])
    if kind == "ping":
        return {"type": "ping"}
    allowed = {"type", "collection", "filter"} if kind == "subscribe" else {"type", "collection"}
    for key in frame:
        if key not in allowed:
            raise ApiError.validation(f"Unknown key '{str(key)[:40]}' in a {kind} frame", path=[str(key)[:40]])
    collection = frame.get("collection")
    if not isinstance(collection, str) or not COLLECTION.fullmatch(collection):
        raise ApiError.validation("'collection' is a collection name", path=["collection"])
    out: dict[str, Any] = {"type": kind, "collection": collection}
    if kind == "subscribe":
        out["match"] = EventFilter(["filter"]).compile(frame.get("filter"))
    return out
