"""A disabled optional plugin leaves no route behind: every operation an app with the plugin
documents (``GET /api/v1/openapi.json``) and an app with it disabled does not, answers 404
``NOT_FOUND`` there, whatever the method. The plugins' own disabled tests name their routes by
hand; this one derives them, so a route added later is checked too."""

from __future__ import annotations

import re

import pytest

from kernel.testing import disabled_with_dependents

PLUGINS = ["editorial", "email", "files", "flows", "pageviews"]
PARAM = re.compile(r"\{[^}]+\}")


async def _operations(app):
    paths = (await app.client.get("/api/v1/openapi.json")).json()["paths"]
    return {
        (method, path)
        for path, item in paths.items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }


@pytest.mark.parametrize("plugin", PLUGINS)
async def test_every_operation_of_a_disabled_plugin_is_404(make_app, plugin):
    full = await make_app()
    off = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents(plugin)})
    gone = sorted(await _operations(full) - await _operations(off))
    assert len(gone) >= 2, (plugin, gone)  # pageviews, the smallest, documents two
    headers = {"Authorization": f"Bearer {await off.login()}", "X-Svc-Site": "default"}
    for method, path in gone:
        url = PARAM.sub("x", path if path.startswith("/api/v1") else "/api/v1" + path)
        resp = await off.client.request(
            method, url, headers=headers, json={} if method in ("post", "put", "patch") else None
        )
        assert (resp.status_code, resp.json()["errors"][0]["code"]) == (404, "NOT_FOUND"), (method, url)
