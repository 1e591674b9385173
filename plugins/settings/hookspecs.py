"""The settings plugin's own extension point (published through ``register_hookspecs``).

A plugin declares the site settings it owns, with their validation::

    from plugins.settings.api import SettingKey

    @hookimpl
    def register_setting_keys(kernel):
        return [SettingKey("upload_policy", validate_policy),
                SettingKey("menu.", validate_menu, public=True)]

A plugin that does not declare ``requires = ("settings",)`` marks its implementation
``@hookimpl(optionalhook=True)``, so the deployment still starts when settings is disabled.
"""

from __future__ import annotations

from typing import Any

from kernel.hooks.hookspecs import hookspec


@hookspec
def register_setting_keys(kernel: Any) -> list[Any] | None:
    """Return the ``plugins.settings.api.SettingKey`` objects the plugin owns.

    ``key`` is an exact key (``pageviews``) or a prefix ending in ``.`` (``menu.``: every key
    starting so). ``validate(value)`` returns the normalised value or raises ``ValueError``
    (answered 400 ``VALIDATION_FAILED`` naming the key) or ``ApiError``. ``public``: readable by
    every authenticated member, not only admins. ``secret``: stored sealed, never answered or
    exported. Called at every settings write and listing, so it must be cheap. Synchronous.
    """
