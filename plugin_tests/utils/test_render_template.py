"""POST /api/v1/utils/render-template: display templates only, escaped by default, bounded."""

from __future__ import annotations

import pytest

from kernel.testing import shared as testing_shared

# Rendering writes nothing: every test shares the module's app (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

RENDER = "/api/v1/utils/render-template"
DATA = {"title": "<Hello>", "author": {"name": "Ann"}, "items": [{"name": "one"}, {"name": "two"}],
        "tags": ["a", "b", "c"]}


async def render(client, headers, template, data=None, **extra):
    body = {"template": template, "data": DATA if data is None else data, **extra}
    return await client.post(RENDER, json=body, headers=headers)


async def output(client, headers, template, data=None, **extra) -> str:
    resp = await render(client, headers, template, data, **extra)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["output"]


async def test_variables_attributes_and_items(client, admin_headers):
    assert await output(client, admin_headers, "{{title}} by {{author.name}}") == "&lt;Hello&gt; by Ann"
    assert await output(client, admin_headers, "{{ items[0].name }}, {{ items.1.name }}") == "one, two"


async def test_escape_can_be_turned_off(client, admin_headers):
    assert await output(client, admin_headers, "{{ title }}", escape=False) == "<Hello>"


async def test_filters_do_not_escape_twice(client, admin_headers):
    data = {"tags": ["<a>", "b&c"]}
    assert await output(client, admin_headers, "{{ tags|join(', ')|upper }}", data) == "&lt;A&gt;, B&amp;C"


async def test_values_print_as_json(client, admin_headers):
    data = {"n": None, "t": True, "o": {"a": [1, 2]}}
    assert await output(client, admin_headers, "[{{ n }}] {{ t }} {{ o }}", data, escape=False) == '[] true {"a":[1,2]}'


async def test_missing_variables_render_empty(client, admin_headers):
    assert await output(client, admin_headers, "[{{ nope }}|{{ nope.deeper[3].x }}|{{ items[9].name }}]") == "[||]"


async def test_whitelisted_filters(client, admin_headers):
    template = ("{{ author.name|upper }} {{ tags|join('-') }} {{ tags|length }} {{ nope|default('n/a') }} "
                "{{ '  x  '|trim }} {{ 'abcdefghij'|truncate(6, true, '..', 0) }} {{ items|join(',', attribute='name') }}")
    assert await output(client, admin_headers, template) == "ANN a-b-c 3 n/a x abcd.. one,two"


async def test_site_header_is_optional(client, site_headers):
    assert await output(client, site_headers, "{{ author.name }}") == "Ann"


@pytest.mark.parametrize("template", [
    "{% for i in range(100000000) %}x{% endfor %}",
    "{% set x = 1 %}",
    "{{ ''.__class__ }}",
    "{{ title.__class__.__mro__ }}",
    "{{ author['__class__'] }}",
    "{{ range(10) }}",
    "{{ title.upper() }}",
    "{{ title|attr('upper') }}",
    "{{ tags|map('upper')|list }}",
    "{{ 'x' * 1000000 }}",
    "{{ title ~ title }}",
    "{{ self }}",
    "{{ title",
])
async def test_code_is_refused(shared_site, template):
    client, admin_headers = shared_site.app.client, shared_site.admin_headers
    resp = await render(client, admin_headers, template)
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED" and error["path"] == ["template"]


async def test_output_is_bounded(client, admin_headers):
    resp = await render(client, admin_headers, "{{ s }}{{ s }}", data={"s": "x" * 600_000})
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["path"] == ["template"]


async def test_a_join_cannot_multiply_the_data(client, admin_headers):
    resp = await render(client, admin_headers, "{{ l|join('" + "y" * 5000 + "') }}", data={"l": [0] * 100_000})
    assert resp.status_code == 400


@pytest.mark.parametrize("body, path", [
    ({"data": {}}, ["template"]),
    ({"template": 5, "data": {}}, ["template"]),
    ({"template": "x" * 10_001, "data": {}}, ["template"]),
    ({"template": "x"}, ["data"]),
    ({"template": "x", "data": []}, ["data"]),
    ({"template": "x", "data": {}, "escape": "no"}, ["escape"]),
    ({"template": "x", "data": {}, "extra": 1}, ["extra"]),
])
async def test_bad_bodies(shared_site, body, path):
    client, admin_headers = shared_site.app.client, shared_site.admin_headers
    resp = await client.post(RENDER, json=body, headers=admin_headers)
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["path"] == path


async def test_needs_a_bearer(client):
    resp = await client.post(RENDER, json={"template": "x", "data": {}})
    assert resp.status_code == 401
