"""A plugin manager assembled from the process's recipe (kernel/hooks/plugins.py ``_Recipe``)
holds what a manager built by registering every module holds, and a change to a module's
namespace, or a plugin that is not a module, goes through pluggy's registration again."""

from __future__ import annotations

import types
from typing import Any

import pytest

from kernel import hookimpl
from kernel.hooks import plugins


def _shape(pm: Any) -> dict[str, Any]:
    """Every hook caller: its specification and its implementations in calling order."""
    out = {}
    for name, caller in vars(pm.hook).items():
        spec = caller.spec and (caller.spec.namespace, caller.spec.opts, caller.spec.argnames)
        impls = [(impl.plugin_name, impl.function, impl.opts) for impl in caller.get_hookimpls()]
        out[name] = (spec, impls, caller.is_historic())
    return out


def _registered_fresh(disabled: tuple[str, ...] = ()) -> tuple[Any, list[Any]]:
    saved = dict(plugins._Recipe._BY_MODULES)
    plugins._Recipe._BY_MODULES.clear()
    try:
        return plugins.make_plugin_manager(disabled)
    finally:
        plugins._Recipe._BY_MODULES.clear()
        plugins._Recipe._BY_MODULES.update(saved)


@pytest.mark.parametrize("disabled", [(), ("git", "dashboards")])
def test_a_manager_from_the_recipe_is_the_registered_one(disabled: tuple[str, ...]) -> None:
    fresh, fresh_infos = _registered_fresh(disabled)
    plugins.make_plugin_manager(disabled)  # records the recipe, if the fresh build did not
    key = plugins._Recipe._key(
        [(m, __import__(m, fromlist=["_"])) for m in plugins.KERNEL_PLUGIN_MODULES]
        + [(i.name, i.module) for i in fresh_infos if i.enabled]
    )
    assert key in plugins._Recipe._BY_MODULES
    built, infos = plugins.make_plugin_manager(disabled)
    assert _shape(built) == _shape(fresh)
    assert len(_shape(built)) > 40
    assert built.list_name_plugin() == fresh.list_name_plugin()
    assert [(i.name, i.enabled, i.requires, i.description) for i in infos] == [
        (i.name, i.enabled, i.requires, i.description) for i in fresh_infos
    ]


def test_managers_from_one_recipe_do_not_share_registrations() -> None:
    plugins.make_plugin_manager()
    one, _ = plugins.make_plugin_manager()
    two, _ = plugins.make_plugin_manager()

    class Extra:
        @hookimpl
        def register_error_codes(self) -> dict[str, tuple[int, str]]:
            return {"RECIPE_TEST": (400, "x")}

    before = len(two.hook.register_error_codes.get_hookimpls())
    one.register(Extra(), name="extra")
    assert len(one.hook.register_error_codes.get_hookimpls()) == before + 1
    assert len(two.hook.register_error_codes.get_hookimpls()) == before
    assert one.hook.register_error_codes is not two.hook.register_error_codes
    one.unregister(name="accounts")
    assert two.get_plugin("accounts") is not None


def test_a_changed_module_is_registered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    plugins.make_plugin_manager(plugins=["utils"])
    module = plugins.available_plugins()["utils"].load()

    @hookimpl
    def register_error_codes() -> dict[str, tuple[int, str]]:
        return {"RECIPE_CHANGED": (400, "x")}

    monkeypatch.setattr(module, "register_error_codes", register_error_codes, raising=False)
    pm, _ = plugins.make_plugin_manager(plugins=["utils"])
    codes: dict[str, Any] = {}
    for group in pm.hook.register_error_codes():
        codes.update(group or {})
    assert codes["RECIPE_CHANGED"] == (400, "x")


def test_a_plugin_object_is_registered_by_pluggy() -> None:
    plugin = types.SimpleNamespace()
    calls: list[str] = []

    class Marker:
        @hookimpl
        def register_error_codes(self) -> dict[str, tuple[int, str]]:
            calls.append("called")
            return {}

    plugins.make_plugin_manager(plugins=["utils", Marker()])
    pm, _ = plugins.make_plugin_manager(plugins=["utils", Marker()])
    pm.hook.register_error_codes()
    assert calls == ["called"]
    assert plugins._Recipe._key([("x", plugin)]) is None
