"""A GraphQL selection as one items read: REST's ``fields`` (dotted paths) and ``deep``.

``read_plan(info, collection)`` walks the selection set of the field being resolved (fragments,
``@skip``/``@include`` and aliases included) and answers the ``fields`` paths and the ``deep``
tree that make the items API read every nested m2o and o2m relation in one query per relation
per level (``plugins/items/read/nested.py``), never one per row. ``_data`` selects ``*`` at
its level. One relation selected twice at a level (two aliases) with different ``limit`` or
``offset`` is refused: one read cannot answer both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLIncludeDirective,
    GraphQLSkipDirective,
    InlineFragmentNode,
    SelectionSetNode,
)
from graphql.execution.values import get_argument_values, get_directive_values

from plugins.graphql import names

MAX_LIMIT = 200


def validation_error(message: str, node: Any = None) -> GraphQLError:
    return GraphQLError(message, node, extensions={"code": "VALIDATION"})


def check_page(limit: Any, offset: Any, node: Any = None) -> None:
    """``limit`` 0 to 200 and ``offset`` not negative (docs/graphql.md, Limits and guards)."""
    if limit is not None and not 0 <= limit <= MAX_LIMIT:
        raise validation_error(f"limit must be between 0 and {MAX_LIMIT}", node)
    if offset is not None and offset < 0:
        raise validation_error("offset must not be negative", node)


@dataclass
class ReadPlan:
    fields: list[str]
    deep: dict[str, Any]

    def csv(self) -> str:
        return ",".join(dict.fromkeys(self.fields))


def _included(node: Any, variables: dict[str, Any]) -> bool:
    skip = get_directive_values(GraphQLSkipDirective, node, variables)
    if skip and skip.get("if") is True:
        return False
    include = get_directive_values(GraphQLIncludeDirective, node, variables)
    return not (include and include.get("if") is False)


def field_nodes(info: Any, selection_set: SelectionSetNode | None, out: list[FieldNode] | None = None,
                seen: frozenset[str] = frozenset()) -> list[FieldNode]:
    """The field nodes of a selection set, fragments spread in."""
    out = [] if out is None else out
    if selection_set is None:
        return out
    variables = info.variable_values
    for sel in selection_set.selections:
        if not _included(sel, variables):
            continue
        if isinstance(sel, FieldNode):
            out.append(sel)
        elif isinstance(sel, InlineFragmentNode):
            field_nodes(info, sel.selection_set, out, seen)
        elif isinstance(sel, FragmentSpreadNode):
            name = sel.name.value
            fragment = info.fragments.get(name)
            if fragment is not None and name not in seen:
                field_nodes(info, fragment.selection_set, out, seen | {name})
    return out


def read_plan(info: Any, collection: str) -> ReadPlan:
    """The items read answering the selection of ``info``'s field over ``collection``."""
    plan = ReadPlan(["id"], {})
    nodes: list[FieldNode] = []
    for node in info.field_nodes:
        field_nodes(info, node.selection_set, nodes)
    _level(info, collection, nodes, [], plan.fields, plan.deep)
    return plan


def _level(info: Any, collection: str, nodes: list[FieldNode], prefix: list[str], fields: list[str],
           deep: dict[str, Any]) -> None:
    graph = info.context.graph
    meta = graph.types[collection]
    parent_type = graph.schema.get_type(names.collection_name(collection))
    relation_args: dict[str, tuple[Any, Any]] = {}
    for node in nodes:
        fm = meta.lookup(node.name.value, parent_type)
        if fm is None:  # __typename
            continue
        if fm.kind == "data":
            fields.append(".".join([*prefix, "*"]))
            continue
        fields.append(".".join([*prefix, fm.key]))
        if fm.kind not in ("m2o", "o2m"):
            continue
        args: tuple[Any, Any] = (None, None)
        if fm.kind == "o2m":
            values = get_argument_values(parent_type.fields[node.name.value], node, info.variable_values)
            args = (values.get("limit"), values.get("offset"))
            check_page(*args, node)
        if relation_args.setdefault(fm.key, args) != args:
            raise validation_error(f"'{node.name.value}' is selected twice with different limit or offset", node)
        sub = deep.setdefault(fm.key, {})
        if args[0] is not None:
            sub["_limit"] = args[0]
        if args[1] is not None:
            sub["_offset"] = args[1]
        fields.append(".".join([*prefix, fm.key, "id"]))
        _level(info, fm.related, field_nodes(info, node.selection_set), [*prefix, fm.key], fields, sub)


def pruned(deep: dict[str, Any]) -> dict[str, Any] | None:
    """``deep`` without the relations that set nothing (``None`` when nothing is left)."""
    out = {}
    for key, value in deep.items():
        if isinstance(value, dict):
            inner = pruned(value)
            if inner:
                out[key] = inner
        else:
            out[key] = value
    return out or None
