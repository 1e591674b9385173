"""The flow graph: ``{ nodes: [{ id, operation, options, position? }], edges: [{ from, to, when? }] }``.

``position`` (``{ x, y }``, numbers from 0 to 100,000) is where the studio draws the node, kept
as given; the runner ignores it.

The entry is the one node with no incoming edge. ``when`` is ``"true"`` (the default) or
``"false"``: a branching operation (``condition``) takes its ``true`` or its ``false`` edges,
any other node takes its ``true`` edges. An active flow's graph must pass ``validate``; a
draft is only checked for shape and size.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

import orjson

from kernel.base.errors import ApiError
from plugins.flows.api import Operation, OptionError
from plugins.flows.data import template_faults

MAX_NODES = 100
MAX_EDGES = 300
MAX_OPTIONS_BYTES = 65_536
MAX_POSITION = 100_000
NODE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
RESERVED = frozenset({"trigger", "last", "steps", "env"})
WHENS = ("true", "false")


def _graph_error(code: str, message: str, node_id: str | None, path: list[Any]) -> ApiError:
    return ApiError(400, code, message, path=path, extensions={"nodeId": node_id})


def check_shape(graph: Any) -> dict[str, Any]:
    """The graph normalised (``options`` default ``{}``, ``when`` default ``"true"``), or 400
    ``VALIDATION_FAILED`` for what no flow may hold (drafts included)."""
    if graph is None:
        return {"nodes": [], "edges": []}
    if not isinstance(graph, dict) or set(graph) - {"nodes", "edges"}:
        raise ApiError.validation("'graph' is an object of 'nodes' and 'edges'", path=["graph"])
    nodes, edges = graph.get("nodes", []), graph.get("edges", [])
    if not isinstance(nodes, list) or len(nodes) > MAX_NODES:
        raise ApiError.validation(f"'graph.nodes' is a list of at most {MAX_NODES} nodes", path=["graph", "nodes"])
    if not isinstance(edges, list) or len(edges) > MAX_EDGES:
        raise ApiError.validation(f"'graph.edges' is a list of at most {MAX_EDGES} edges", path=["graph", "edges"])
    out_nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, node in enumerate(nodes):
        where = ["graph", "nodes", i]
        if not isinstance(node, dict) or set(node) - {"id", "operation", "options", "position"}:
            raise ApiError.validation("A node is an object of 'id', 'operation', 'options' and 'position'", path=where)
        node_id = node.get("id")
        if not isinstance(node_id, str) or not NODE_ID.match(node_id) or node_id in RESERVED:
            raise ApiError.validation("A node 'id' is 1 to 64 letters, digits and '_', not starting with a digit "
                                      f"(and not {', '.join(sorted(RESERVED))})", path=[*where, "id"])
        if node_id in seen:
            raise ApiError.validation(f"Two nodes have the id '{node_id}'", path=[*where, "id"], nodeId=node_id)
        seen.add(node_id)
        operation = node.get("operation")
        if not isinstance(operation, str) or not 0 < len(operation) <= 40:
            raise ApiError.validation("A node's 'operation' is an operation key", path=[*where, "operation"],
                                      nodeId=node_id)
        options = node.get("options", {})
        if options is None:
            options = {}
        if not isinstance(options, dict):
            raise ApiError.validation("A node's 'options' is an object", path=[*where, "options"], nodeId=node_id)
        shaped = {"id": node_id, "operation": operation, "options": options}
        position = node.get("position")
        if position is not None:
            if not isinstance(position, dict) or set(position) != {"x", "y"} or not all(
                    isinstance(position[k], (int, float)) and not isinstance(position[k], bool)
                    and 0 <= position[k] <= MAX_POSITION for k in ("x", "y")):
                raise ApiError.validation(f"A node's 'position' is {{x, y}}, numbers from 0 to {MAX_POSITION}",
                                          path=[*where, "position"], nodeId=node_id)
            shaped["position"] = {"x": position["x"], "y": position["y"]}
        out_nodes.append(shaped)
    out_edges: list[dict[str, Any]] = []
    for i, edge in enumerate(edges):
        where = ["graph", "edges", i]
        if not isinstance(edge, dict) or set(edge) - {"from", "to", "when"} or not all(
                isinstance(edge.get(k), str) and 0 < len(edge[k]) <= 64 for k in ("from", "to")):
            raise ApiError.validation("An edge is an object of 'from' and 'to' (node ids) and optional 'when'",
                                      path=where)
        when = edge.get("when", "true")
        if when not in WHENS:
            raise ApiError.validation("An edge's 'when' is 'true' or 'false'", path=[*where, "when"])
        out_edges.append({"from": edge["from"], "to": edge["to"], "when": when})
    return {"nodes": out_nodes, "edges": out_edges}


def entry_of(graph: dict[str, Any]) -> str | None:
    targets = {e["to"] for e in graph["edges"]}
    entries = [n["id"] for n in graph["nodes"] if n["id"] not in targets]
    return entries[0] if len(entries) == 1 else None


def validate(graph: dict[str, Any], operations: dict[str, Operation]) -> None:
    """400 with ``GRAPH_DANGLING_EDGE``, ``GRAPH_UNKNOWN_OPERATION``, ``GRAPH_NO_ENTRY`` or
    ``GRAPH_CYCLE`` (and ``nodeId``), or ``VALIDATION_FAILED`` for a node's options (its
    operation's declared option types, then its ``validate``), unless ``graph`` (already shaped) may be active."""
    nodes = graph["nodes"]
    ids = {n["id"]: i for i, n in enumerate(nodes)}
    if not nodes:
        raise _graph_error("GRAPH_NO_ENTRY", "An active flow needs at least one node", None, ["graph", "nodes"])
    for i, edge in enumerate(graph["edges"]):
        for end in ("from", "to"):
            if edge[end] not in ids:
                raise _graph_error("GRAPH_DANGLING_EDGE", f"Edge {i} points {end} the unknown node '{edge[end]}'",
                                   edge[end], ["graph", "edges", i, end])
        if edge["from"] == edge["to"]:
            raise _graph_error("GRAPH_CYCLE", f"Node '{edge['from']}' has an edge to itself", edge["from"],
                               ["graph", "edges", i])
    for i, node in enumerate(nodes):
        if node["operation"] not in operations:
            raise _graph_error("GRAPH_UNKNOWN_OPERATION", f"Node '{node['id']}' names the unknown operation "
                               f"'{node['operation']}'", node["id"], ["graph", "nodes", i, "operation"])
    incoming = {n["id"]: 0 for n in nodes}
    outgoing: dict[str, list[str]] = {n["id"]: [] for n in nodes}
    for edge in graph["edges"]:
        incoming[edge["to"]] += 1
        outgoing[edge["from"]].append(edge["to"])
    entries = [n["id"] for n in nodes if incoming[n["id"]] == 0]
    if not entries:
        # Every node has an incoming edge: there is a cycle and no entry; the entry rule speaks first.
        raise _graph_error("GRAPH_NO_ENTRY", "No node is without an incoming edge, so the flow has no entry",
                           nodes[0]["id"], ["graph", "edges"])
    if len(entries) > 1:
        raise _graph_error("GRAPH_NO_ENTRY", f"A flow has one entry; nodes {', '.join(entries[:5])} have no "
                           "incoming edge", entries[1], ["graph", "nodes", ids[entries[1]]])
    order = topological(nodes, graph["edges"])
    if len(order) < len(nodes):
        stuck = next(n["id"] for n in nodes if n["id"] not in set(order))
        raise _graph_error("GRAPH_CYCLE", f"The graph has a cycle through node '{stuck}'", stuck,
                           ["graph", "nodes", ids[stuck]])
    for edge_index, edge in enumerate(graph["edges"]):
        if edge["when"] == "false" and not operations[nodes[ids[edge["from"]]]["operation"]].branches:
            raise ApiError.validation(f"Node '{edge['from']}' does not branch; its edges cannot be 'when: false'",
                                      path=["graph", "edges", edge_index, "when"], nodeId=edge["from"])
    for i, node in enumerate(nodes):
        check_options(operations[node["operation"]], node, i)


def check_options(op: Operation, node: dict[str, Any], index: int) -> None:
    where = ["graph", "nodes", index, "options"]
    if len(orjson.dumps(node["options"], default=str)) > MAX_OPTIONS_BYTES:
        raise ApiError.validation(f"A node's options are at most {MAX_OPTIONS_BYTES} bytes of JSON", path=where,
                                  nodeId=node["id"])
    for name, value in node["options"].items():
        if name in op.raw:
            continue
        fault = template_faults(value, [name])
        if fault:
            raise ApiError.validation(f"Not a valid template: {fault[1]}"[:300], path=[*where, *fault[0]],
                                      nodeId=node["id"])
    try:
        op.check_options(node["options"])
    except OptionError as exc:
        raise ApiError.validation(f"Step '{node['id']}': {exc}", path=[*where, *exc.option],
                                  nodeId=node["id"]) from exc
    if op.validate is None:
        return
    try:
        op.validate(node["options"])
    except OptionError as exc:
        raise ApiError.validation(str(exc), path=[*where, *exc.option], nodeId=node["id"]) from exc
    except ApiError as exc:
        raise ApiError.validation(exc.message, path=[*where, *(exc.details[0].path or [])], nodeId=node["id"]) from exc
    except (TypeError, ValueError) as exc:
        raise ApiError.validation(f"Bad options: {exc}"[:300], path=where, nodeId=node["id"]) from exc


def topological(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> list[str]:
    """Kahn's order of the node ids (shorter than ``nodes`` when there is a cycle)."""
    incoming = {n["id"]: 0 for n in nodes}
    outgoing: dict[str, list[str]] = {n["id"]: [] for n in nodes}
    for edge in edges:
        if edge["from"] in outgoing and edge["to"] in incoming:
            incoming[edge["to"]] += 1
            outgoing[edge["from"]].append(edge["to"])
    ready = deque(n["id"] for n in nodes if incoming[n["id"]] == 0)
    order: list[str] = []
    while ready:
        current = ready.popleft()
        order.append(current)
        for nxt in outgoing[current]:
            incoming[nxt] -= 1
            if incoming[nxt] == 0:
                ready.append(nxt)
    return order
