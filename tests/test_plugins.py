"""The plugin manager: entry points, a fresh manager per app, disabling, essentials, requires."""

from __future__ import annotations

import types

import pytest

from kernel import Route, hookimpl
from kernel.app import create_app
from kernel.base.settings import Settings
from kernel.hooks.plugins import PluginError, available_plugins, essential_plugins, make_plugin_manager
from kernel.testing import disabled_with_dependents


def test_builtin_plugins_load_through_entry_points():
    installed = available_plugins()
    assert {"accounts", "utils"} <= set(installed)
    for ep in installed.values():
        assert ep.value.startswith("plugins.") and ep.value.endswith(".plugin")
    pm, infos = make_plugin_manager()
    names = {i.name for i in infos}
    assert names == set(installed)
    for name in names:
        assert pm.get_plugin(name) is not None


def test_each_app_gets_a_fresh_manager(tmp_path):
    settings = lambda: Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)})  # noqa: E731
    one, two = create_app(settings()), create_app(settings())
    assert one.kernel.pm is not two.kernel.pm
    extra = types.SimpleNamespace()
    one.kernel.pm.register(extra, name="extra")
    assert two.kernel.pm.get_plugin("extra") is None


def test_disabling_an_optional_plugin():
    # Plugins requiring utils (email for its template renderer, flows for it and JSONata) go with it.
    pm, infos = make_plugin_manager(disabled=disabled_with_dependents("utils").split(","))
    assert pm.get_plugin("utils") is None
    info = next(i for i in infos if i.name == "utils")
    assert not info.enabled


@pytest.mark.parametrize("name", sorted(essential_plugins()))
def test_essential_plugins_cannot_be_disabled(name):
    with pytest.raises(PluginError, match=f"'{name}' is essential"):
        make_plugin_manager(disabled=[name])


def test_requires_is_checked_with_both_names():
    needy = types.SimpleNamespace(name="needy", requires=("utils",))
    with pytest.raises(PluginError) as err:
        make_plugin_manager(plugins=[needy])
    assert "'needy'" in str(err.value) and "'utils'" in str(err.value)
    make_plugin_manager(plugins=["utils", needy])


def test_requires_a_disabled_plugin_at_boot(monkeypatch):
    from kernel.hooks import plugins as plugins_mod

    real = plugins_mod.available_plugins

    class FakeEP:
        name = "needy"
        value = "x"

        def load(self):
            return types.SimpleNamespace(name="needy", requires=("utils",))

    monkeypatch.setattr(plugins_mod, "available_plugins", lambda: {**real(), "needy": FakeEP()})
    with pytest.raises(PluginError, match="'needy' requires plugin 'utils', which is disabled"):
        make_plugin_manager(disabled=disabled_with_dependents("utils").split(","))


def test_unknown_plugin_name_is_an_error():
    with pytest.raises(PluginError, match="not installed"):
        make_plugin_manager(plugins=["no-such-plugin"])


def test_a_plugin_can_publish_hookspecs():
    from kernel.hooks.hookspecs import hookspec

    class Specs:
        @hookspec
        def register_widgets(self):
            """A hook published by a plugin."""

    class Publisher:
        name = "publisher"

        @hookimpl
        def register_hookspecs(self, pm):
            pm.add_hookspecs(Specs)

    class Consumer:
        name = "consumer"

        @hookimpl
        def register_widgets(self):
            return ["w"]

    pm, _ = make_plugin_manager(plugins=[Publisher(), Consumer()])
    assert pm.hook.register_widgets() == [["w"]]


async def test_disabled_plugin_routes_answer_404(make_app):
    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("utils")})
    resp = await app.client.get("/api/v1/utils/version")
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "NOT_FOUND"


async def test_plugin_routes_are_mounted(make_app):
    class Hello:
        async def on_get(self, req, resp):
            resp.media = {"data": "hi"}

    class HelloPlugin:
        name = "hello"

        @hookimpl
        def register_routes(self, kernel):
            return [Route("/hello", Hello(), site="none", auth="public")]

    app = await make_app(plugins=["accounts", HelloPlugin()])
    assert (await app.client.get("/api/v1/hello")).json() == {"data": "hi"}
    assert any(r.plugin == "hello" for r in app.kernel.routes)


def test_settings_errors_name_the_variable():
    from kernel.base.settings import SettingsError

    with pytest.raises(SettingsError, match="SVC_PORT"):
        Settings.from_env(environ={"SVC_PORT": "eighty"})
    with pytest.raises(SettingsError, match="SVC_SMTP_TLS"):
        Settings.from_env(environ={"SVC_SMTP_TLS": "maybe"})


def test_plugin_settings_are_declared_and_checked(tmp_path):
    from kernel import Setting
    from kernel.base.settings import SettingsError, parse_int

    class Configured:
        name = "configured"

        @hookimpl
        def register_settings(self):
            return [Setting("SVC_WIDGET_LIMIT", 5, parse_int(1), "How many widgets.")]

    env = {"SVC_DATA_DIR": str(tmp_path), "SVC_WIDGET_LIMIT": "7"}
    app = create_app(Settings.from_env(environ=env), plugins=["accounts", Configured()])
    assert app.kernel.settings.get("widget_limit") == 7
    with pytest.raises(SettingsError, match="SVC_WIDGET_LIMIT"):
        create_app(Settings.from_env(environ={**env, "SVC_WIDGET_LIMIT": "0"}), plugins=["accounts", Configured()])


def test_a_plugin_declares_itself_essential(monkeypatch):
    from kernel.hooks import plugins as plugins_mod

    class FakeEP:
        name = "keystone"
        value = "x"

        def load(self):
            return types.SimpleNamespace(name="keystone", essential=True)

    installed = {**available_plugins(), "keystone": FakeEP()}
    monkeypatch.setattr(plugins_mod, "available_plugins", lambda: dict(installed))
    monkeypatch.setattr(plugins_mod, "_ESSENTIAL", {})
    assert plugins_mod.essential_plugins() == {"accounts", "access", "schema", "items", "keystone"}
    with pytest.raises(PluginError, match="'keystone' is essential"):
        make_plugin_manager(disabled=["keystone"])
    _, infos = make_plugin_manager(plugins=["utils"])
    assert {i.name for i in infos if i.essential} == {"accounts", "access", "schema", "items", "keystone"}


def test_plugin_settings_take_keyword_overrides_and_refuse_strangers(tmp_path):
    from kernel.app import build_kernel
    from kernel.base.errors import SettingsError

    env = {"SVC_DATA_DIR": str(tmp_path), "SVC_RATE_LIMIT_ITEMS_READ": "7"}
    kernel = build_kernel(Settings.from_env(environ=env, max_batch=3))
    # Declared by the items plugin, with their variables and defaults unchanged.
    assert (kernel.settings.get("max_batch"), kernel.settings.max_batch) == (3, 3)
    assert kernel.settings.get("rate_limit_items_read") == 7
    assert kernel.settings.get("rate_limit_auth") == 30
    assert "max_batch" not in kernel.settings.values
    with pytest.raises(SettingsError, match="unknown setting 'max_btach'"):
        build_kernel(Settings.from_env(environ=env, max_btach=3))
    # A plugin's setting is unknown when the plugin is not loaded.
    with pytest.raises(SettingsError, match="unknown setting 'rate_limit_ai'"):
        build_kernel(Settings.from_env(environ=env, rate_limit_ai=1), plugins=["utils"])
