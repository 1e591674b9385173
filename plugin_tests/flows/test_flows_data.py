"""The pure parts of a run's data handling: the condition evaluator, templates and redaction."""

from plugins.flows import data


def test_condition_evaluator():
    d = {"$trigger": {"n": 3, "name": "Hello World", "tags": ["a", "b"], "none": None, "obj": {"k": 1}},
         "$last": None, "step": {"ok": True}}
    yes = [
        {"$trigger": {"n": {"_eq": 3}}}, {"$trigger": {"n": {"_gt": 2, "_lte": 3}}},
        {"$trigger": {"n": {"_in": [1, 3]}}}, {"$trigger": {"n": {"_between": [3, 4]}}},
        {"$trigger": {"name": {"_icontains": "world"}}}, {"$trigger": {"name": {"_starts_with": "Hell"}}},
        {"$trigger": {"tags": {"_contains": "a"}}}, {"$trigger": {"none": {"_null": True}}},
        {"$trigger": {"obj": {"_has_key": "k"}}}, {"$trigger.obj.k": {"_eq": 1}},
        {"step": {"ok": {"_eq": True}}},
        {"_or": [{"$trigger": {"n": {"_eq": 0}}}, {"$trigger": {"n": {"_neq": 0}}}]},
        {"_and": [{"$trigger": {"n": {"_nnull": True}}}, {"$trigger": {"n": {"_nin": [1]}}}]},
    ]
    no = [
        {"$trigger": {"n": {"_gt": 3}}}, {"$trigger": {"name": {"_lt": 5}}},  # a string is not below 5
        {"$trigger": {"missing": {"_eq": 1}}}, {"$trigger": {"n": {"_contains": "3"}}},
        {"_and": [{"$trigger": {"n": {"_eq": 3}}}, {"step": {"ok": {"_eq": False}}}]},
        {"nowhere": {"deeper": {"_eq": 1}}},
    ]
    for tree in yes:
        data.check_condition(tree, ["filter"])
        assert data.matches(tree, d), tree
    for tree in no:
        data.check_condition(tree, ["filter"])
        assert not data.matches(tree, d), tree


def test_templates_and_redaction():
    d = {"$trigger": {"body": {"n": 7, "who": "<b>you</b>"}}, "$last": {"x": [1, 2]}, "save": {"id": "i1"}}
    assert data.render_value("{{ $trigger.body }}", d) == {"n": 7, "who": "<b>you</b>"}
    assert data.render_value("{{ $save.id }}", d) == "i1"
    assert data.render_value("{{$last.x.1}}", d) == 2
    assert data.render_value({"a": ["n={{ $trigger.body.n }}", 5]}, d) == {"a": ["n=7", 5]}
    assert data.render_value("hi {{ $trigger.body.who }}", d) == "hi <b>you</b>"  # not HTML-escaped
    assert data.render_value("{{ $nothing.here }}", d) is None
    assert data.template_faults({"m": ["ok", "{% if x %}y{% endif %}"]}, []) is not None
    assert data.template_faults({"m": "{{ a.b | default('c') }}"}, []) is None
    masked = data.redact({"password": "p", "apiToken": "t", "Authorization": "a", "x-api-key": "k",
                          "nested": [{"client_secret": "s", "passed": True, "name": "n"}]})
    assert masked == {"password": data.MASK, "apiToken": data.MASK, "Authorization": data.MASK,
                      "x-api-key": data.MASK,
                      "nested": [{"client_secret": data.MASK, "passed": True, "name": "n"}]}
