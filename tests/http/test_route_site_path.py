"""``Route(site="path")`` and ``openapi_path``: what a route declaring them must hold, and how the
OpenAPI document shows it (docs/writing_plugins.md#routes). The HTTP behaviour is tested where it
is used: plugin_tests/files/test_assets_in_path.py and the delivery tests."""

from __future__ import annotations

import pytest

from kernel import Route
from kernel.http.openapi import _operation


class Asset:
    async def on_get_site(self, req, resp, id, file_id):  # noqa: A002 (Falcon's field name)
        pass


def test_a_path_site_needs_its_parameter_and_the_documented_path_its_segments():
    with pytest.raises(ValueError, match="needs the parameter"):
        Route("/assets/{id}", Asset(), site="path")
    with pytest.raises(ValueError, match="needs the parameter"):
        Route("/assets/{id}/{file_id}", Asset(), site="path", site_param="site")
    for documented in ("/assets/{site_id}", "/assets/{site_id}/{id}/x", "/files/{site_id}/{id}"):
        with pytest.raises(ValueError, match="must differ only in field names"):
            Route("/assets/{id}/{file_id}", Asset(), site="path", site_param="id", openapi_path=documented)


def test_the_document_shows_the_documented_path_and_no_site_header():
    route = Route("/assets/{id}/{file_id}", Asset(), site="path", site_param="id", suffix="site", auth="public",
                  openapi_path="/assets/{site_id}/{id}")
    assert route.template == "/api/v1/assets/{id}/{file_id}"  # what Falcon routes
    assert route.documented == "/api/v1/assets/{site_id}/{id}"  # what the document shows
    params = _operation(route, "GET")["parameters"]
    assert [(p["name"], p["in"]) for p in params] == [("site_id", "path"), ("id", "path")]
    header = Route("/assets/{id}", Asset(), auth="public")
    assert ("X-Svc-Site", "header") in [(p["name"], p["in"]) for p in _operation(header, "GET")["parameters"]]
