"""Falcon's compiled router, built once per set of route templates in a process.

Adding a route to Falcon's ``CompiledRouter`` validates its template, checks it against its
siblings (a parse of every sibling's segment) and, on the first request, compiles the whole tree
to Python source. For svc's ~230 routes that is ~60 % of building an app: nothing a production
process notices (it builds one), but the test suite builds thousands of apps with the same
templates. ``SvcRouter`` queues the routes that ``create_app`` adds and builds them at ``finish()``
(or on the first lookup): the first time a sequence of templates is seen, through Falcon's own
``add_route`` and ``_compile``; afterwards, by copying that tree and its compiled finder and
putting the new app's resources and responders on its nodes.

The tree and the finder depend only on the templates, their order and the router's options; the
responders are mapped per resource exactly as Falcon's ``add_route`` maps them
(``map_http_methods``, the default responders, the coroutine check), so a copied router answers
every path as a freshly built one does (``tests/http/test_router.py`` compares them). A route
added after ``finish()`` goes through Falcon's ``add_route`` as usual.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from falcon.routing import CompiledRouter
from falcon.routing.util import set_default_responders

# Falcon's private attributes this relies on; without them (another Falcon), every router is
# built by Falcon's own add_route.
_FALCON_STATE = ("_roots", "_return_values", "_patterns", "_converters", "_find", "_finder_src", "_ast")


@dataclass(frozen=True)
class _Skeleton:
    """A compiled routing tree without resources: nodes, finder and what the finder indexes."""

    roots: list[Any]
    return_values: list[Any]  # nodes of ``roots``, in the finder's order
    patterns: list[Any]
    converters: list[Any]
    find: Any
    finder_src: str
    ast: Any


# How a resource class's responders map (suffix, ASGI and options in the key): per method, the
# attribute to take from the resource, or Falcon's default responder (405, OPTIONS), which holds
# no state of the app. Only for plain classes: no ``on_*`` on the instance, no ``__getattr__``.
_LAYOUTS: dict[tuple[Any, ...], list[tuple[str, str | None, Any]]] = {}
_SKELETONS: dict[tuple[Any, ...], _Skeleton] = {}
_SKELETONS_MAX = 16
_LOCK = threading.Lock()


def _plain(resource: object) -> bool:
    """Whether ``resource``'s responders are its class's (so the layout of the class holds)."""
    cls = type(resource)
    if cls.__getattribute__ is not object.__getattribute__ or hasattr(cls, "__getattr__"):
        return False
    own = getattr(resource, "__dict__", None)
    return own is not None and not any(name.startswith("on_") for name in own)


def _copy_tree(nodes: list[Any], mapping: dict[int, Any], leaves: dict[str, tuple[Any, Any]] | None) -> list[Any]:
    """A copy of the nodes and their children (``mapping``: id of a node -> its copy), with
    ``leaves`` (template -> (resource, method map)) on the nodes of those templates, or no
    resource at all when ``leaves`` is None."""
    copied = []
    for node in nodes:
        new = object.__new__(type(node))
        new.__dict__.update(node.__dict__)
        new.children = _copy_tree(node.children, mapping, leaves)
        if node.uri_template is not None:
            resource, method_map = (None, None) if leaves is None else leaves[node.uri_template]
            new.resource, new.method_map = resource, method_map
        mapping[id(node)] = new
        copied.append(new)
    return copied


class SvcRouter(CompiledRouter):
    """``CompiledRouter`` that builds the routes added before ``finish()`` in one go, reusing the
    compiled tree of an earlier router with the same templates in this process."""

    def __init__(self) -> None:
        super().__init__()
        self._queued: list[tuple[str, object, dict[str, Any]]] | None = []

    def add_route(self, uri_template: str, resource: object, **kwargs: Any) -> None:
        if self._queued is None or kwargs.get("compile"):
            self.finish()
            super().add_route(uri_template, resource, **kwargs)
            return
        self._queued.append((uri_template, resource, kwargs))

    def find(self, uri: str, req: Any = None) -> Any:
        if self._queued is not None:
            self.finish()
        return super().find(uri, req)

    def _key(self, queued: list[tuple[str, object, dict[str, Any]]]) -> tuple[Any, ...]:
        options = self._options
        return (tuple(template for template, _, _ in queued), options.default_to_on_request,
                tuple(sorted(options.converters.items())))

    def _method_map(self, resource: object, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The responders of ``resource``, as Falcon's ``add_route`` maps and checks them (once
        per class: later resources of a plain class take the same attributes)."""
        suffix, asgi = kwargs.get("suffix"), kwargs.get("_asgi", False)
        key = (type(resource), suffix, asgi, self._options.default_to_on_request)
        plain = _plain(resource) and not self._options.default_to_on_request  # on_request: the resource's
        layout = _LAYOUTS.get(key) if plain else None
        if layout is not None:
            return {method: getattr(resource, name) if name else default for method, name, default in layout}
        method_map = self._falcon_method_map(resource, kwargs)
        if plain:
            explicit = self.map_http_methods(resource, **kwargs)
            _LAYOUTS[key] = [
                (method, f"on_{method.lower()}" + (f"_{suffix}" if suffix else ""), None) if method in explicit
                else (method, None, responder) for method, responder in method_map.items()]
        return method_map

    def _falcon_method_map(self, resource: object, kwargs: dict[str, Any]) -> dict[str, Any]:
        method_map = self.map_http_methods(resource, **kwargs)
        default_responder = None
        if self._options.default_to_on_request:
            suffix = kwargs.get("suffix")
            default_responder = getattr(resource, "on_request" + (f"_{suffix}" if suffix else ""), None)
        asgi = kwargs.get("_asgi", False)
        set_default_responders(method_map, asgi=asgi, default_responder=default_responder)
        if asgi:
            self._require_coroutine_responders(method_map)
        else:
            self._require_non_coroutine_responders(method_map)
        return method_map

    def finish(self) -> None:
        """Build the queued routes (at most once; later routes are added one by one)."""
        queued, self._queued = self._queued, None
        if not queued:
            return
        key = self._key(queued)
        skeleton = _SKELETONS.get(key) if all(hasattr(self, name) for name in _FALCON_STATE) else None
        if skeleton is None:
            for template, resource, kwargs in queued:
                super().add_route(template, resource, **kwargs)
            self._find = self._compile()
            if all(hasattr(self, name) for name in _FALCON_STATE):
                mapping: dict[int, Any] = {}
                roots = _copy_tree(self._roots, mapping, None)
                skeleton = _Skeleton(roots, [mapping[id(n)] for n in self._return_values], self._patterns,
                                     self._converters, self._find, self._finder_src, self._ast)
                with _LOCK:
                    if len(_SKELETONS) >= _SKELETONS_MAX:
                        _SKELETONS.pop(next(iter(_SKELETONS)))
                    _SKELETONS[key] = skeleton
            return
        leaves: dict[str, tuple[Any, Any]] = {}
        for template, resource, kwargs in queued:  # a later route of a template replaces the earlier
            leaves[template] = (resource, self._method_map(resource, kwargs))
        mapping = {}
        self._roots = _copy_tree(skeleton.roots, mapping, leaves)
        self._return_values = [mapping[id(n)] for n in skeleton.return_values]
        self._patterns = skeleton.patterns
        self._converters = skeleton.converters
        self._finder_src = skeleton.finder_src
        self._ast = skeleton.ast
        self._find = skeleton.find
