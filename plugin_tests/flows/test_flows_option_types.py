"""Operations declare typed options (``Option``): ``GET /flows/operations`` lists them as
``optionSchema``, and an active flow's step options are checked against them on save (a 400
``VALIDATION_FAILED`` naming the step and the option). Flows disabled: test_flows_disabled.py."""

from __future__ import annotations

import pytest

from kernel import hookimpl
from plugin_tests.flows.conftest import flow, one_node
from plugins.flows.api import OPTION_TYPES, Operation, Option


class TypedPlugin:
    """An extension's operation with an option of every type."""

    name = "typed"

    @staticmethod
    async def echo(ctx, options):
        return options

    @hookimpl(optionalhook=True)
    def register_flow_operations(self, kernel):
        return [Operation("typed-echo", self.echo, options={
            "count": Option("number", required=True, label="Count"),
            "loud": Option("boolean", default=False, label="Loud"),
            "mood": Option("enum", choices=("calm", "wild"), default="calm"),
            "text": Option("template"),
            "name": Option("string"),
            "collection": Option("collection"),
            "field": Option("field", collection_option="collection"),
            "extra": Option("json"),
            "tags": Option("string", many=True),
        })]


async def test_every_built_in_operation_declares_typed_options(shared_site):
    listed = {op["key"]: op for op in await shared_site.calls.ok("get", "/flows/operations")}
    for key in ("log", "transform", "jsonata", "condition", "request", "item-create", "item-read", "item-update",
                "item-delete", "mail", "notify"):
        schema = listed[key]["optionSchema"]
        assert schema and set(schema) == set(listed[key]["options"]), key
        for name, option in schema.items():
            assert option["type"] in OPTION_TYPES and option.get("declared", True), (key, name)
            assert option["label"], (key, name)
    request = listed["request"]["optionSchema"]
    assert request["url"]["required"] is True and request["url"]["type"] == "template"
    assert request["method"] == {"type": "enum", "required": False, "default": "GET", "description": "",
                                 "choices": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"], "label": "Method",
                                 "many": False}
    assert listed["item-create"]["optionSchema"]["collection"]["type"] == "collection"
    assert listed["mail"]["optionSchema"]["to"]["many"] is True


@pytest.mark.parametrize(("options", "option", "words"), [
    ({}, "count", "'count' is required"),
    ({"count": "three"}, "count", "'count' must be a number"),
    ({"count": True}, "count", "'count' must be a number"),
    ({"count": 1, "loud": "yes"}, "loud", "'loud' must be true or false"),
    ({"count": 1, "mood": "grumpy"}, "mood", "'mood' must be one of calm, wild"),
    ({"count": 1, "name": 5}, "name", "'name' must be a string"),
    ({"count": 1, "tags": ["a", 2]}, "tags", "'tags' must be a list of string"),
    ({"count": 1, "colour": "red"}, "colour", "Unknown option 'colour' (allowed: count, loud, mood"),
])
async def test_a_step_option_against_its_declared_type(svc_app, calls, temporary_plugin, options, option, words):
    with temporary_plugin(svc_app.kernel, TypedPlugin()):
        body = flow(graph=one_node("typed-echo", options, node_id="shape"))
        error = await calls.err("post", "/flows", 400, "VALIDATION_FAILED", json=body)
        assert error["extensions"]["nodeId"] == "shape"
        assert error["path"] == ["graph", "nodes", "0", "options", option]
        assert error["message"].startswith(f"Step 'shape': {words}"), error["message"]


async def test_right_types_templates_and_drafts_save(svc_app, calls, calls_b, temporary_plugin):
    with temporary_plugin(svc_app.kernel, TypedPlugin()):
        good = {"count": 2.5, "loud": True, "mood": "wild", "text": "hi {{ $trigger.who }}", "name": "n",
                "collection": "posts", "field": "title", "extra": [1, {"a": None}], "tags": "one"}
        made = await calls.ok("post", "/flows", 201, json=flow(graph=one_node("typed-echo", good)))
        # An item key may be text or a number (Option(also=...)), as it always could.
        await calls.ok("post", "/flows", 201, json=flow(graph=one_node("item-delete", {"collection": "posts", "key": 5})))
        # A template passes any type's check: it is rendered when the step runs.
        templated = {"count": "{{ $trigger.n }}", "tags": ["a", "{{ $trigger.tag }}"]}
        await calls.ok("patch", f"/flows/{made['id']}", json={"graph": one_node("typed-echo", templated)})
        # A draft is checked for shape only: wrong types wait for activation.
        draft = await calls.ok("post", "/flows", 201, json=flow(status="draft", graph=one_node("typed-echo",
                                                                                                {"count": "x"})))
        error = await calls.err("patch", f"/flows/{draft['id']}", 400, "VALIDATION_FAILED", json={"status": "active"})
        assert error["path"][-1] == "count" and error["extensions"]["nodeId"] == "n1"
        # Site B neither sees site A's flow nor learns how its options are wrong.
        await calls_b.err("patch", f"/flows/{draft['id']}", 404, "NOT_FOUND", json={"status": "active"})
        await calls_b.err("patch", f"/flows/{made['id']}", 404, "NOT_FOUND",
                          json={"graph": one_node("typed-echo", {"count": "x"})})
        # Both sites list the same registered operations, typed.
        theirs = {op["key"]: op for op in await calls_b.ok("get", "/flows/operations")}
        assert theirs["typed-echo"]["optionSchema"]["field"]["collectionOption"] == "collection"


def test_an_option_declaration_is_checked_when_made():
    with pytest.raises(ValueError, match="type is one of"):
        Option("colour")
    with pytest.raises(ValueError, match="needs its choices"):
        Option("enum")
    with pytest.raises(ValueError, match="default 'x' is not of its type"):
        Option("number", default="x")
    with pytest.raises(ValueError, match="unknown option settings: colour"):
        Operation("bad", TypedPlugin.echo, options={"a": {"type": "string", "colour": 1}})
    # An extension's options cross the runner as describe() mappings, and come back the same.
    op = Operation("fine", TypedPlugin.echo, options={"a": Option("enum", choices=("x",), label="A"),
                                                       "b": "a free-text hint"})
    again = Operation("fine", TypedPlugin.echo, options={k: o.describe() for k, o in op.options.items()})
    assert again.options == op.options and not again.typed
    # An untyped (hint-only) operation takes options it does not name, as before.
    again.check_options({"a": "x", "c": 1})
    # A value may have one of several types (an item key: text or a number).
    key = Option("template", also=("number",))
    assert key.check("7") is None and key.check(7) is None and key.check(True) == "a string or a number"
    with pytest.raises(ValueError, match="other types"):
        Option("string", also=("enum",))
