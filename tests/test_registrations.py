"""``kernel.hooks.plugins.registrations``: a plugin-published registration hook is read again when its
implementations change: a provider replaced under the same name is read again.

The cache holds the implementations themselves, not their ``id()``: a freed function's address
can go to its successor, and a cache keyed by ``id()`` then kept the old registrations (a flaky
AI test showed it, a retried skill of the replaced provider). This test replaces the provider many
times; where CPython reuses the address it catches that, but it cannot force the reuse.
"""

from __future__ import annotations

import gc
import types

import pluggy

from kernel.hooks.hookspecs import hookimpl, hookspec
from kernel.hooks.plugins import registrations


class Specs:
    @hookspec
    def register_things(self, kernel):
        """Things, by their name."""


class Thing:
    def __init__(self, name: str) -> None:
        self.name = name


class Provider:
    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def register_things(self, kernel):
        return [Thing(self.name)]


def test_a_replacement_registered_under_the_same_name_is_read_again():
    pm = pluggy.PluginManager("svc")
    pm.add_hookspecs(Specs)
    kernel = types.SimpleNamespace(pm=pm, state={})
    # An extension upgraded in place: the old provider unregistered (and freed), a new one
    # registered under the same name.
    for version in range(40):
        pm.register(Provider(f"v{version}"), name="provider")
        assert set(registrations(kernel, "register_things", Thing, "name", "thing")) == {f"v{version}"}
        pm.unregister(name="provider")
        # The young generations only: the provider and its bound methods were made just now. A
        # full collection walked every object the worker's earlier tests left (~11 s of CPU in CI).
        gc.collect(1)
