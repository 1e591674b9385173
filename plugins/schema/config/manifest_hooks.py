"""The extension point for the config manifest's other sections: ``settings`` and ``webhooks``.

The schema plugin owns the manifest but not those resources, so it publishes a hook (pytest's
``pytest_addhooks`` pattern: ``register_hookspecs`` adds this module) through which the plugin
that owns a section contributes it. A section nobody provides exports as ``[]``, is left out
of ``managedScopes``, and is accepted on import only when empty.

A provider is any object with these attributes (duck-typed; ``ConfigSection`` documents them)::

    class SettingsSection:
        name = "settings"        # the manifest key: "settings" or "webhooks"
        key = "key"              # the entry key that identifies an entry ("name" for webhooks)
        async def export(self, db): ...          # SiteDB -> [entry], in manifest form, no secrets
        def check(self, entry): ...              # entry -> normalised entry, or raise ApiError (400)
        async def put(self, uow, entry): ...     # create or update one entry in the unit of work
        async def delete(self, uow, key): ...    # remove the entry with this key

    @hookimpl
    def config_sections(kernel):
        return [SettingsSection()]
"""

from __future__ import annotations

from typing import Any, Protocol

from kernel.hooks.hookspecs import hookspec

SECTION_NAMES = ("settings", "webhooks")


class ConfigSection(Protocol):
    """What a manifest section provider offers (see the module docstring)."""

    name: str
    key: str

    async def export(self, db: Any) -> list[dict[str, Any]]: ...

    def check(self, entry: dict[str, Any]) -> dict[str, Any]: ...

    async def put(self, uow: Any, entry: dict[str, Any]) -> None: ...

    async def delete(self, uow: Any, key: str) -> None: ...


@hookspec
def config_sections(kernel: Any) -> list[Any] | None:
    """Return the config manifest sections this plugin provides (``settings``, ``webhooks``).

    Each is an object with ``name``, ``key``, ``async export(db)``, ``check(entry)``,
    ``async put(uow, entry)`` and ``async delete(uow, key)`` (see
    ``plugins/schema/config/manifest_hooks.py``). Called at every export and import, so it must be
    cheap and synchronous. ``export`` never returns secrets; ``put`` and ``delete`` write in the
    import's unit of work (one transaction with the schema changes) and emit the section's
    own events. One provider per section: the first answer wins.
    """


def sections(kernel: Any) -> dict[str, Any]:
    """The providers by section name (only ``settings`` and ``webhooks`` are manifest sections)."""
    out: dict[str, Any] = {}
    for group in kernel.pm.hook.config_sections(kernel=kernel):
        for section in group or []:
            name = getattr(section, "name", None)
            if name in SECTION_NAMES and name not in out:
                out[name] = section
    return out
