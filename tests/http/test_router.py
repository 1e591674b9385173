"""SvcRouter (kernel/http/router.py): an app whose router reuses the compiled tree of an earlier app
in the process routes every path exactly as Falcon's own router built route by route does."""

from __future__ import annotations

import re

import pytest
from falcon.routing import CompiledRouter
from falcon.routing.compiled import UnacceptableRouteError

from kernel.http import router as router_mod
from kernel.http.router import SvcRouter


def _plain_router(routes) -> CompiledRouter:
    plain = CompiledRouter()
    for route in routes:
        kwargs = {"suffix": route.suffix} if route.suffix else {}
        plain.add_route(route.template, route.resource, _asgi=True, **kwargs)
    return plain


def _paths(templates: list[str]) -> list[str]:
    """Each template with its fields filled, plus near misses (an extra or a missing segment)."""
    paths = set()
    for template in templates:
        filled = re.sub(r"\{[^}]+\}", "v1", template)
        paths |= {filled, filled + "/extra", filled.rsplit("/", 1)[0], filled.replace("v1", "a b")}
    return sorted(paths | {"/", "/nowhere", "/api/v1/", "/api/v1/items"})


def _same_answers(one: CompiledRouter, other: CompiledRouter, paths: list[str]) -> int:
    matched = 0
    for path in paths:
        a, b = one.find(path), other.find(path)
        assert (a is None) == (b is None), path
        if a is None:
            continue
        matched += 1
        assert a[0] is b[0], path  # the same resource object
        assert a[2:] == b[2:], path  # params and template
        assert sorted(a[1]) == sorted(b[1]), path  # the same methods
        for method, responder in a[1].items():
            owner = getattr(responder, "__self__", None)
            assert owner is None or owner is a[0], (path, method)  # never another app's resource
            if owner is not None:  # the resource's own responders
                assert responder == b[1][method], (path, method)
            else:  # Falcon's defaults (405, OPTIONS)
                assert responder.__qualname__ == b[1][method].__qualname__, (path, method)
    return matched


async def test_a_reused_tree_routes_as_falcon_builds_it(svc_app, make_app):
    routes = svc_app.kernel.routes
    plain = _plain_router(routes)
    paths = _paths([r.template for r in routes])
    router = svc_app.app._router
    assert isinstance(router, SvcRouter)
    assert router._queued is None  # built at create_app
    key = router._key([(r.template, None, {}) for r in routes])
    assert key in router_mod._SKELETONS  # the default app's tree is kept for the next app
    assert _same_answers(router, plain, paths) > len(routes)
    assert router.finder_src == plain.finder_src

    # A second app reuses the tree; its nodes hold its own resources, not the first app's.
    second = await make_app()
    again = second.app._router
    assert again._find is router._find
    assert _same_answers(again, _plain_router(second.kernel.routes), paths) > len(routes)
    found, before = again.find("/api/v1/openapi.json"), router.find("/api/v1/openapi.json")
    assert found is not None and before is not None
    assert found[0] is not before[0] and found[0].kernel is second.kernel


class _Res:
    async def on_get(self, req, resp, **params):
        return None

    async def on_post_one(self, req, resp, **params):
        return None


def test_a_template_added_twice_keeps_the_later_resource_in_both_ways():
    first, later = _Res(), _Res()
    built = []
    for _ in range(2):  # the first builds through Falcon, the second copies the tree
        router = SvcRouter()
        router.add_route("/dup/a", first, _asgi=True)
        router.add_route("/dup/{x}", _Res(), _asgi=True)
        router.add_route("/dup/a", later, _asgi=True)
        router.add_route("/dup/a/one", later, suffix="one", _asgi=True)
        router.finish()
        built.append(router)
    assert built[1]._find is built[0]._find
    for router in built:
        assert router.find("/dup/a")[0] is later
        assert router.find("/dup/b")[2] == {"x": "b"}
        assert set(router.find("/dup/a/one")[1]) >= {"POST", "OPTIONS"}


def test_a_route_added_after_finish_is_routed():
    for _ in range(2):
        router = SvcRouter()
        router.add_route("/late/a", _Res(), _asgi=True)
        router.finish()
        extra = _Res()
        router.add_route("/late/b", extra, _asgi=True)
        assert router.find("/late/b")[0] is extra
        assert router.find("/late/a") is not None


def test_bad_templates_and_sync_responders_are_refused_as_by_falcon():
    class Sync:
        def on_get(self, req, resp):
            return None

    router = SvcRouter()
    router.add_route("/bad/{a}/{a}", _Res(), _asgi=True)
    with pytest.raises(ValueError, match="more than once"):
        router.finish()
    router = SvcRouter()
    router.add_route("/sync/x", _Res(), _asgi=True)
    router.finish()
    router = SvcRouter()  # the same template: the tree is copied, the responders still checked
    router.add_route("/sync/x", Sync(), _asgi=True)
    with pytest.raises(TypeError, match="non-blocking"):
        router.finish()
    router = SvcRouter()
    router.add_route("/conflict/{a}", _Res(), _asgi=True)
    router.add_route("/conflict/{b}/x", _Res(), _asgi=True)
    with pytest.raises(UnacceptableRouteError):
        router.finish()
