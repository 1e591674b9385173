"""The plugin manager: entry points, essential vs optional, blocking, ``requires`` checks.

Built-in plugins load through the ``svc.plugins`` entry-point group exactly as third-party
ones do. Each app gets a fresh manager (no module-level state). A plugin is a module (or
any object) with ``@hookimpl`` functions and optional attributes ``requires`` (names of
plugins it imports through their ``api.py``), ``description`` and ``essential`` (``True``: the
kernel refuses to start without it, because other features read data through it; the kernel
itself names no plugin).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy

from kernel.hooks import hookspecs

log = logging.getLogger("svc.plugins")

ENTRY_POINT_GROUP = "svc.plugins"
# Hook implementations that are part of the kernel itself; always registered, never listed.
KERNEL_PLUGIN_MODULES = ("kernel.admin.sites", "kernel.http.defaults", "kernel.admin.jobs", "kernel.policy.privacy",
                         "kernel.admin.work")


class PluginError(RuntimeError):
    """The plugin set cannot start: an essential plugin disabled, a requirement missing..."""


@dataclass
class PluginInfo:
    """One plugin as ``svc plugins list`` shows it."""

    name: str
    module: Any
    enabled: bool
    essential: bool
    requires: tuple[str, ...] = ()
    description: str = ""
    registers: dict[str, list[str]] = field(default_factory=dict)


# The installed entry points, per ``sys.path``: reading them means reading the metadata of every
# installed distribution (about 40 ms in the test venv), and a test run builds thousands of apps.
# What is installed does not change under a running process (a new plugin needs a restart anyway).
_INSTALLED: dict[tuple[str, ...], dict[str, Any]] = {}


def available_plugins() -> dict[str, Any]:
    """Every installed plugin by entry-point name (not yet loaded)."""
    key = tuple(sys.path)
    found = _INSTALLED.get(key)
    if found is None:
        found = _INSTALLED[key] = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return dict(found)


_ESSENTIAL: dict[tuple[str, ...], frozenset[str]] = {}


def essential_plugins() -> frozenset[str]:
    """The installed plugins that declare themselves essential (``essential = True`` on the
    plugin object): they cannot be disabled, and a named plugin set gets them too. Reading the
    flag loads each installed plugin's module once per process; one that cannot be imported (a
    disabled plugin whose optional dependency is missing) is not essential."""
    key = tuple(sys.path)
    found = _ESSENTIAL.get(key)
    if found is None:
        found = _ESSENTIAL[key] = frozenset(
            name for name, ep in available_plugins().items() if getattr(_load_or_none(ep), "essential", False) is True)
    return found


def _load_or_none(ep: Any) -> Any:
    try:
        return ep.load()
    except ImportError as exc:
        log.debug("plugin %s cannot be imported (%s): not essential", ep.name, exc)
        return None


def _describe(obj: Any) -> str:
    """The first line of the plugin package's docstring (its room sign), else the object's."""
    doc = ""
    module_name = getattr(obj, "__name__", "")
    if "." in module_name:
        package = module_name.rsplit(".", 1)[0]
        try:
            doc = inspect.getdoc(sys.modules.get(package) or importlib.import_module(package)) or ""
        except ImportError:
            doc = ""
    doc = doc or inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _plugin_name(obj: Any) -> str:
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(obj, "__name__", type(obj).__name__).rsplit(".", 1)[-1]


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, remembering which attributes of a plugin module are hook
    implementations: registering looks at every name in the module through
    ``inspect.getattr_static`` (~10 ms for the installed plugins), and an app builds a fresh
    manager. The answer is kept per module attribute and object, so a replaced attribute is
    looked at again."""

    _MODULE_OPTS: dict[tuple[str, str], tuple[Any, Any]] = {}

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not isinstance(plugin, types.ModuleType):
            return super().parse_hookimpl_opts(plugin, name)
        value = plugin.__dict__.get(name)
        key = (plugin.__name__, name)
        cached = self._MODULE_OPTS.get(key)
        if cached is None or cached[0] is not value:
            cached = self._MODULE_OPTS[key] = (value, super().parse_hookimpl_opts(plugin, name))
        opts = cached[1]
        return None if opts is None else dict(opts)  # pluggy normalizes (changes) the dict it gets


class _Recipe:
    """What registering a set of plugin modules made of a fresh manager (its hook callers:
    specification and implementations in calling order), kept per process so that a later
    manager for the same modules is assembled from it instead of registering them again
    (looking at every attribute of every module, a ``HookImpl`` per implementation, the
    specifications' signatures: ~8 ms of an app's ~30 ms build). ``svc serve --workers N``
    builds one manager per worker; the test suite one per test's app.

    Only plain modules qualify (a test's plugin object is registered the usual way), and a
    recipe holds while every module's namespace holds the same objects it held when recorded
    (a replaced or added attribute, such as a test's ``monkeypatch``, records it anew). The
    ``HookImpl`` and ``HookSpec`` objects are shared between managers, read-only; each manager
    gets its own callers and lists, so registering or unregistering on one changes no other."""

    _BY_MODULES: dict[tuple[tuple[str, int], ...], _Recipe] = {}
    _MAX = 16

    def __init__(self, modules: list[tuple[types.ModuleType, dict[str, Any]]], name2plugin: dict[str, Any],
                 callers: list[tuple[str, Any, list[Any], bool]],
                 described: dict[str, tuple[tuple[str, ...], str]]) -> None:
        self.modules = modules
        self.name2plugin = name2plugin
        self.callers = callers
        self.described = described

    @staticmethod
    def _key(registered: list[tuple[str, Any]]) -> tuple[tuple[str, int], ...] | None:
        if not all(isinstance(module, types.ModuleType) for _, module in registered):
            return None
        return tuple((name, id(module)) for name, module in registered)

    @classmethod
    def find(cls, registered: list[tuple[str, Any]]) -> _Recipe | None:
        key = cls._key(registered)
        recipe = cls._BY_MODULES.get(key) if key is not None else None
        if recipe is None:
            return None
        for (module, namespace), (_, current) in zip(recipe.modules, registered, strict=True):
            now = current.__dict__
            if module is not current or len(now) != len(namespace) or any(
                    now.get(name, namespace) is not value for name, value in namespace.items()):
                return None
        return recipe

    @classmethod
    def record(cls, registered: list[tuple[str, Any]], pm: pluggy.PluginManager,
               described: dict[str, tuple[tuple[str, ...], str]]) -> None:
        key = cls._key(registered)
        callers = []
        for name, caller in vars(pm.hook).items():
            if not isinstance(caller, pluggy.HookCaller):
                continue
            history = getattr(caller, "_call_history", None)
            impls = getattr(caller, "_hookimpls", None)
            if key is None or history or not isinstance(impls, list):  # another pluggy, or history to replay
                return
            callers.append((name, caller.spec, list(impls), history is not None))
        recipe = _Recipe([(module, dict(module.__dict__)) for _, module in registered],
                         dict(pm._name2plugin), callers, described)
        if len(cls._BY_MODULES) >= cls._MAX:
            cls._BY_MODULES.pop(next(iter(cls._BY_MODULES)))
        cls._BY_MODULES[key] = recipe

    def build(self) -> _PluginManager:
        """A new manager holding what the recorded one held after registration."""
        pm = _PluginManager("svc")
        pm._name2plugin.update(self.name2plugin)
        for name, spec, impls, historic in self.callers:
            caller = pluggy.HookCaller(name, pm._hookexec)
            caller.spec = spec
            if historic:
                caller._call_history = []
            caller._hookimpls.extend(impls)
            setattr(pm.hook, name, caller)
        return pm


def make_plugin_manager(
    disabled: Iterable[str] = (),
    plugins: Iterable[Any] | None = None,
    trace: bool = False,
    extra: Iterable[str] = (),
) -> tuple[pluggy.PluginManager, list[PluginInfo]]:
    """Build a fresh manager with the kernel's hookspecs and the chosen plugins registered.

    ``plugins=None`` loads every ``svc.plugins`` entry point except ``disabled``; otherwise
    each element is an entry-point name or a plugin object (tests name what they want), and
    the installed essential plugins are added.
    ``extra`` (``SVC_PLUGINS_EXTRA``) names importable modules registered as plugins too, for
    code not packaged with an entry point (local development, a test's plugin in a subprocess).
    Raises ``PluginError`` when an essential plugin is disabled or a requirement is missing.
    """
    disabled = {d.strip() for d in disabled if d.strip()}
    installed = available_plugins()
    essential = essential_plugins()
    blocked_essential = sorted(disabled & essential)
    if blocked_essential:
        raise PluginError(
            f"plugin {blocked_essential[0]!r} is essential and cannot be disabled "
            f"(remove it from SVC_PLUGINS_DISABLED)"
        )
    unknown = sorted(disabled - set(installed))
    if unknown:
        log.warning("SVC_PLUGINS_DISABLED names plugins that are not installed: %s", ", ".join(unknown))

    infos: list[PluginInfo] = []
    if plugins is None:
        for name in sorted(installed):
            enabled = name not in disabled
            module = installed[name].load() if enabled else None
            infos.append(PluginInfo(name, module, enabled, name in essential))
    else:
        # Essential plugins cannot be left out any more than disabled: a named set gets them too.
        named = {item for item in plugins if isinstance(item, str)}
        plugins = [*sorted(essential - named), *plugins]
        for item in plugins:
            if isinstance(item, str):
                if item not in installed:
                    raise PluginError(f"plugin {item!r} is not installed (no {ENTRY_POINT_GROUP} entry point)")
                module = installed[item].load()
                infos.append(PluginInfo(item, module, True, item in essential))
            else:
                infos.append(PluginInfo(_plugin_name(item), item, True, False))

    for modname in extra:
        try:
            module = importlib.import_module(modname)
        except ImportError as exc:
            raise PluginError(f"SVC_PLUGINS_EXTRA: cannot import {modname!r}: {exc}") from exc
        infos.append(PluginInfo(_plugin_name(module), module, True, False))

    registered = [(modname, __import__(modname, fromlist=["_"])) for modname in KERNEL_PLUGIN_MODULES]
    registered += [(info.name, info.module) for info in infos if info.enabled]
    recipe = None if trace else _Recipe.find(registered)
    if recipe is not None:
        pm = recipe.build()
        for info in infos:
            if info.enabled:
                info.requires, info.description = recipe.described[info.name]
    else:
        pm = _PluginManager("svc")
        pm.add_hookspecs(hookspecs)
        for name, module in registered[:len(KERNEL_PLUGIN_MODULES)]:
            pm.register(module, name=name)
        for info in infos:
            if not info.enabled:
                continue
            info.requires = tuple(getattr(info.module, "requires", ()) or ())
            info.description = getattr(info.module, "description", "") or _describe(info.module)
            pm.register(info.module, name=info.name)

    enabled = {i.name for i in infos if i.enabled}
    for info in infos:
        if not info.enabled:
            continue
        for req in info.requires:
            if req not in enabled:
                why = "disabled" if req in installed else "not installed"
                raise PluginError(
                    f"plugin {info.name!r} requires plugin {req!r}, which is {why}; "
                    f"enable {req!r} or disable {info.name!r}"
                )

    if recipe is None:
        pm.hook.register_hookspecs(pm=pm)
        # Hooks published by plugins must be checked after they were added.
        pm.check_pending()
        if not trace:
            _Recipe.record(registered, pm, {i.name: (i.requires, i.description) for i in infos if i.enabled})
    if trace:
        pm.trace.root.setwriter(lambda msg: log.debug("hook: %s", msg.rstrip()))
        pm.enable_tracing()
    return pm, infos


def _calls(hook: Any, kwargs: dict[str, Any]) -> Iterator[Any]:
    """Call the implementations of ``hook`` in pluggy order (last registered / tryfirst first),
    lazily, yielding each result (a coroutine for an async implementation: await it)."""
    for impl in reversed(hook.get_hookimpls()):
        yield impl.function(**{name: kwargs[name] for name in impl.argnames})


async def call_all(hook: Any, **kwargs: Any) -> list[Any]:
    """Every implementation's non-``None`` result, in pluggy order. Exceptions propagate."""
    results = []
    for value in _calls(hook, kwargs):
        if inspect.isawaitable(value):
            value = await value
        if value is not None:
            results.append(value)
    return results


async def call_first(hook: Any, **kwargs: Any) -> Any:
    """The first non-``None`` result, stopping there.

    pluggy's own ``firstresult`` cannot do this for coroutine functions (a coroutine object
    is never ``None``), so the chain is walked here. (A plain generator, not an async one: an
    async generator left unfinished is closed through the event loop's finalizer hook, a
    thread-safe wake-up of the loop on every request.)
    """
    for value in _calls(hook, kwargs):
        if inspect.isawaitable(value):
            value = await value
        if value is not None:
            return value
    return None


def registrations(kernel: Any, hook_name: str, kind: type, key: str, what: str) -> dict[str, Any]:
    """Everything the implementations of a plugin-published registration hook (``register_flow_
    operations``, ``register_ai_skills``) return, indexed by the attribute ``key`` and cached in
    ``kernel.state`` until the hook's implementations change (an extension loaded or unloaded).
    An entry may be a mapping of ``kind``'s fields, made ``kind(**entry)`` here: a plugin that
    does not require the publisher (and so imports nothing of it) registers that way. A stranger is
    ``TypeError``; a key registered twice is ``ValueError`` naming both plugins
    (called at startup, either stops the app at boot). ``what`` names the things in messages."""
    hook = getattr(kernel.pm.hook, hook_name)
    # The implementations themselves, not their id(): the cache holds them, so a function of an
    # unloaded plugin cannot be freed and its id reused by its successor's (a bound method of a
    # new instance often lands at the freed address), which kept the old registrations.
    impls = tuple((impl.plugin_name, impl.function) for impl in hook.get_hookimpls())
    state_key = f"registrations.{hook_name}"
    cached = kernel.state.get(state_key)
    if cached is not None and len(cached[0]) == len(impls) and all(
            name == old_name and function is old for (name, function), (old_name, old) in zip(impls, cached[0], strict=True)):
        return cached[1]
    found: dict[str, Any] = {}
    owners: dict[str, str] = {}
    for impl in hook.get_hookimpls():
        for entry in impl.function(kernel=kernel) or ():
            if isinstance(entry, Mapping):
                entry = kind(**entry)
            if not isinstance(entry, kind):
                raise TypeError(f"{hook_name} of {impl.plugin_name} must return {kind.__name__} objects, "
                                f"got {entry!r}")
            name = getattr(entry, key)
            if name in found:
                raise ValueError(f"{what} {name!r} is registered by both {owners[name]} and {impl.plugin_name}")
            found[name] = entry
            owners[name] = impl.plugin_name
    kernel.state[state_key] = (impls, found)
    return found
