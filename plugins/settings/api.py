"""What other plugins may use of settings (declare ``requires = ("settings",)``).

- ``SettingKey``: the declaration a plugin returns from ``register_setting_keys``.
- ``await get_setting(kernel, site_id, key, default)``: a site's setting, through the bounded
  per-site ``settings`` cache (a change drops it on every worker through the bus).
- ``await setting_of_every_site(kernel, key)``: ``{site_id: value}`` in one query, for a job
  that applies a per-site setting across the deployment.
- ``await put_setting(ctx, key, value)``: set (``None`` unsets) one setting of ``ctx``'s site
  exactly as ``PUT /settings/:key`` does (the owner's validation, audit, announcement), for a
  plugin's own route over its key (``PUT /uploads/config``); the caller checks who may.
- ``await drop_prefix(conn, prefix)`` then, after commit, ``await announce_dropped(kernel, dropped)``:
  remove every site's keys under ``prefix`` (an uninstalled extension's ``ext.<name>.``).
- ``CHANGED_EVENT``: the action event after a change, payload ``{ siteId, keys }``; subscribe
  with ``bus.on_action`` to apply a change at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plugins.settings.store import CHANGED_EVENT, drop_prefix, read_cached, read_every_site


@dataclass(frozen=True)
class SettingKey:
    """A setting a plugin owns.

    ``key``: an exact key, or a prefix ending in ``.`` (``menu.``). ``validate(value)``: the
    normalised value, or ``ValueError("what is wrong")``. ``public``: readable by non-admins.
    ``secret``: stored sealed (needs ``SVC_ENCRYPTION_KEY``), never answered nor exported.
    ``type``: the JSON type of its value, for editors (``GET /settings/keys``): ``string``,
    ``integer``, ``number``, ``boolean``, ``object``, ``array``, or ``json`` (any); ``validate``
    stays the check.
    """

    key: str
    validate: Callable[[Any], Any]
    public: bool = False
    secret: bool = False
    description: str = ""
    type: str = "json"


async def get_setting(kernel: Any, site_id: str, key: str, default: Any = None) -> Any:
    """The value of ``key`` in ``site_id``, or ``default`` when it is not set."""
    found, value = await read_cached(kernel, site_id, key)
    return value if found else default


async def setting_of_every_site(kernel: Any, key: str) -> dict[str, Any]:
    """``{site_id: value}`` of ``key`` in every site that sets it, in one query: for a job that
    applies a per-site setting across the deployment without visiting each site."""
    return await read_every_site(kernel, key)


async def put_setting(ctx: Any, key: str, value: Any) -> Any:
    """Set ``key`` to ``value`` (``None`` unsets it) in ``ctx``'s site; returns the value as
    stored (normalised by the owner's ``validate``). 400 ``VALIDATION_FAILED`` when refused."""
    from plugins.settings.service import put_one

    return (await put_one(ctx, key, value))["value"]


async def announce_dropped(kernel: Any, dropped: dict[str, list[str]]) -> None:
    """After the commit of ``drop_prefix``: each site's ``settings.changed``, so every worker's
    cache forgets the dropped keys."""
    from kernel.messaging.bus import EventContext

    for site_id, keys in dropped.items():
        await kernel.bus.action(CHANGED_EVENT, {"siteId": site_id, "keys": sorted(keys)},
                                EventContext(site_id=site_id, kernel=kernel))


async def preferences_of(conn: Any, user_id: str) -> dict[str, Any]:
    """A user's stored preferences blob (identity-global; ``{}`` when none), for the privacy
    plugin's data export."""
    from plugins.settings.site.preferences import stored_preferences

    return await stored_preferences(conn, user_id) or {}


__all__ = ["CHANGED_EVENT", "SettingKey", "announce_dropped", "drop_prefix", "get_setting", "preferences_of", "put_setting", "setting_of_every_site"]
