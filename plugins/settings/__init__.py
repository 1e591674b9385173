"""settings: site settings, site configuration, view presets, translation memory, preferences.

Tables (``tables.py``, migrations ``settings_0001_settings``, ``settings_0002_site_presets_tm``):
``svc_settings``, ``svc_site_config``, ``svc_presets``, ``svc_tm_entries``, ``svc_glossary`` (all
with ``site_id``) and ``svc_user_preferences`` (keyed by user: preferences are identity-global).

- **Settings** (``keys``, ``store``, ``service``, ``routes``, ``config_section``):
  ``GET, PATCH /settings``, ``GET, PUT /settings/{key}``, ``POST /settings/export`` and
  ``/settings/apply``, the manifest's ``settings`` section. A plugin declares the keys it owns
  through this plugin's hook ``register_setting_keys`` (``hookspecs.py``; ``api.SettingKey``):
  the owner validates them and may make them public (readable by non-admins) or secret (sealed,
  never shown or exported). Other plugins read with ``api.get_setting`` through the bounded
  ``settings`` site cache, which every worker drops on ``settings.changed`` (``{ siteId, keys }``).
- **Site** (``site_fields``, ``site_config``): ``GET, PATCH /site``; 409 ``DOMAIN_TAKEN``; the
  ``resolve_site`` hook maps a ``Host`` that is a site's ``domain`` to it (after the kernel's
  ``X-Svc-Site`` and subdomain); ``site_allowed_origins`` answers ``siteUrl`` and ``domain``.
- **Preferences** (``preferences``): ``GET, PATCH /me/preferences``.
- **Presets** (``presets``): ``/presets``, ``/presets/effective``, ``/presets/bookmarks``,
  ``/presets/{id}``: user, role-chain and global scopes.
- **Translation memory** (``tm``, ``tm_index``, ``tm_lookup``, ``glossary``, ``translate``,
  ``routes_tm``): ``/tm``, ``/tm/{id}``, ``/tm/lookup``, ``/tm/glossary``, ``/tm/translate``
  (memory, glossary, then a LibreTranslate-protocol provider).

Hooks: register_hookspecs (``register_setting_keys``), register_setting_keys (``tm.provider``),
register_settings, register_site_caches (``settings``, ``site_config``,
``site_domains``, ``tm_index``), register_event_handlers, config_sections (``settings``),
register_error_codes (``DOMAIN_TAKEN``, ``TRANSLATION_FAILED``), resolve_site,
site_allowed_origins, register_routes. Audit actions: ``settings.update``, ``settings.apply``,
``settings.import``, ``site.update``.
"""
