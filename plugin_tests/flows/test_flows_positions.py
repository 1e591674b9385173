"""A node's optional ``position`` (where the studio draws it, flows43): kept as given through
create and update, refused when it is not ``{x, y}`` of numbers from 0 to 100,000, another
site's flow not reachable."""

from __future__ import annotations

import pytest

from plugin_tests.flows.conftest import flow, log_graph


async def test_positions_are_kept_and_bad_ones_refused(calls, calls_b):
    graph = log_graph("a", "b")
    graph["nodes"][0]["position"] = {"x": 30, "y": 100.5}
    made = await calls.ok("post", "/flows", 201, json=flow(graph=graph))
    assert made["graph"]["nodes"][0]["position"] == {"x": 30, "y": 100.5}
    assert "position" not in made["graph"]["nodes"][1]
    graph["nodes"][1]["position"] = {"x": 230, "y": 250}
    changed = await calls.ok("patch", f"/flows/{made['id']}", json={"graph": graph})
    assert [n.get("position") for n in changed["graph"]["nodes"]] == [{"x": 30, "y": 100.5}, {"x": 230, "y": 250}]
    assert (await calls.ok("get", f"/flows/{made['id']}"))["graph"] == changed["graph"]
    await calls_b.err("patch", f"/flows/{made['id']}", 404, "NOT_FOUND", json={"graph": graph})


@pytest.mark.parametrize("position", [
    {"x": 1}, {"x": 1, "y": 2, "z": 3}, {"x": -1, "y": 0}, {"x": 0, "y": 100_001}, {"x": "1", "y": 2},
    {"x": True, "y": 2}, [1, 2], "here",
])
async def test_a_position_that_cannot_be_drawn_is_400(shared_site, position):
    graph = log_graph("a")
    graph["nodes"][0]["position"] = position
    error = await shared_site.calls.err("post", "/flows", 400, "VALIDATION_FAILED", json=flow(status="draft", graph=graph))
    assert error["path"] == ["graph", "nodes", "0", "position"] and error["extensions"]["nodeId"] == "a"
