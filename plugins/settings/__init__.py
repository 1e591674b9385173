"""settings: site settings, site configuration, view presets, translation memory, preferences.

Settings (``svc_settings``): ``GET, PATCH /settings``, ``GET, PUT /settings/{key}``,
``POST /settings/export`` and ``/settings/apply``. A plugin declares the keys it owns through
this plugin's hook ``register_setting_keys`` (``hookspecs.py``; ``api.SettingKey``): the owner
validates them, may make them public (readable by non-admins) or secret (sealed, never shown
or exported). Undeclared keys are stored as JSON within a size cap. Other plugins read a
setting with ``api.get_setting`` through the bounded ``settings`` site cache, which every
worker drops on the ``settings.changed`` action (payload ``{ siteId, keys }``).

Hooks: register_hookspecs (``register_setting_keys``), register_settings,
register_migrations, register_site_caches (``settings``), register_routes.
Audit actions: ``settings.update``, ``settings.apply``.
"""
