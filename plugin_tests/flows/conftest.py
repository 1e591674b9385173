"""Flows tests: a fast event-log poll, and small bounds that hostile input meets quickly."""

import pytest_asyncio

FLOWS_ENV = {
    "SVC_EVENTS_POLL_SECONDS": "0.1",
    "SVC_FLOWS_REQUEST_TIMEOUT": "2",
    # Long: an ordinary JSONata step never misses it on a loaded machine (a 0.4 s limit once failed
    # "nothing.here" in a whole run). The runaway expressions run on an app of their own with
    # HOSTILE_JSONATA_MS (test_flows_runs.py), so that they are stopped quickly.
    "SVC_JSONATA_TIMEOUT_MS": "10000",
    "SVC_FLOWS_MAX_OUTPUT_BYTES": "4096",
    "SVC_FLOWS_MAX_RESPONSE_BYTES": "4096",
}
HOSTILE_JSONATA_MS = 500


@pytest_asyncio.fixture
async def svc_app(make_app):
    return await make_app(env=FLOWS_ENV)


def log_graph(*ids, operation="log"):
    """A straight line of ``log`` nodes."""
    nodes = [{"id": i, "operation": operation, "options": {"message": f"step {i}"}} for i in ids]
    edges = [{"from": a, "to": b} for a, b in zip(ids, ids[1:], strict=False)]
    return {"nodes": nodes, "edges": edges}


def flow(trigger="manual", status="active", graph=None, **options):
    """A flow body: ``trigger`` with ``options`` as its triggerOptions, two ``log`` nodes by default."""
    return {
        "name": f"f-{trigger}",
        "status": status,
        "trigger": trigger,
        "triggerOptions": options,
        "graph": graph if graph is not None else log_graph("a", "b"),
    }


def one_node(operation, options, node_id="n1"):
    """A graph of one node."""
    return {"nodes": [{"id": node_id, "operation": operation, "options": options}], "edges": []}
