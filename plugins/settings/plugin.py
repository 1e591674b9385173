"""Hook implementations of the settings plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.base.settings import parse_float, parse_int
from plugins.settings import config_section, hookspecs, routes, schemas, store
from plugins.settings.api import SettingKey
from plugins.settings.site import routes_site, site_config
from plugins.settings.tm import routes_tm, tm, tm_lookup, translate

name = "settings"
requires = ("access", "accounts")  # accounts: svc_user_preferences keys on svc_users (a foreign key)


@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(hookspecs)


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_SETTINGS_MAX_VALUE_BYTES", 65_536, parse_int(64),
                "Largest JSON value of one site setting, in bytes (declared or not)."),
        Setting("SVC_SETTINGS_MAX_KEYS", 1_000, parse_int(1), "Most settings one site may hold."),
        Setting("SVC_TM_PROVIDER_URL", "", translate.parse_provider_url,
                "Base URL of a LibreTranslate-protocol server for /tm/translate (a site's tm.provider setting wins)."),
        Setting("SVC_TM_PROVIDER_API_KEY", "", str, "The api_key sent to that server (secret; optional)."),
        Setting("SVC_TM_PROVIDER_TIMEOUT", 10.0, parse_float(0.1, 120), "Seconds to wait for the provider."),
    ]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [store.SETTINGS_CACHE, site_config.CONFIG_CACHE, site_config.DOMAIN_CACHE, tm_lookup.INDEX_CACHE]


@hookimpl
def register_setting_keys(kernel: Any) -> list[SettingKey]:
    return [SettingKey(translate.PROVIDER_SETTING, translate.provider_validator(kernel), secret=True, type="object",
                       description="The site's LibreTranslate server { url, apiKey? } for /tm/translate.")]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    forget = site_config.forget_domains(kernel)
    bus.on_action(site_config.CHANGED_EVENT, forget, priority=0)
    bus.on_action(site_config.SITES_EVENT, forget, priority=0)
    bus.on_action(tm.CHANGED_EVENT, tm_lookup.on_changed(kernel), priority=0)


@hookimpl
def config_sections(kernel: Any) -> list[Any]:
    return [config_section.SettingsSection(kernel)]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {"DOMAIN_TAKEN": (409, "Another site already has this domain."),
            "TRANSLATION_FAILED": (502, "The machine-translation provider failed or could not be reached.")}


@hookimpl
async def resolve_site(request: Any, kernel: Any) -> str | None:
    """After the kernel's ``X-Svc-Site`` and ``SVC_BASE_DOMAIN`` subdomain (which this defers
    to by answering nothing), a ``Host`` that is a site's ``domain`` names that site."""
    from kernel.http.defaults import resolve_site as by_header_or_subdomain

    if by_header_or_subdomain(request, kernel) is not None:
        return None
    return await site_config.site_of_host(kernel, request.host)


@hookimpl
async def site_allowed_origins(kernel: Any, site_id: str) -> list[str]:
    return await site_config.allowed_origins(kernel, site_id)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    reads = {"GET": "bearer", "*": "admin"}
    return [
        Route("/tm", routes_tm.EntriesResource(), auth=reads, openapi=schemas.upserting(ops(
            get=("Translation-memory entries (source, target, entrySource, q: text in either side, limit, offset)", None,
                 [schemas.TM_ENTRY], 200),
            post=("Create or update the entry of (languages, source text)", schemas.TM_BODY, schemas.TM_ENTRY,
                  201)))),
        Route("/tm/lookup", routes_tm.LookupResource(), openapi=ops(
            post=("Best fuzzy match at a threshold (default 75)", schemas.LOOKUP_BODY, schemas.LOOKUP, 200))),
        Route("/tm/translate", routes_tm.TranslateResource(), openapi=ops(
            post=("Translate: memory, then glossary, then the provider", schemas.TRANSLATE_BODY,
                  schemas.TRANSLATION, 200))),
        Route("/tm/glossary", routes_tm.GlossaryResource(), auth=reads, openapi=schemas.upserting(ops(
            get=("Glossary terms (source, target, limit, offset)", None, [schemas.TERM], 200),
            post=("Create a term or change its translation", schemas.TERM_BODY, schemas.TERM, 201)))),
        Route("/tm/glossary/{term_id}", routes_tm.GlossaryTermResource(), auth="admin", openapi=ops(
            delete=("Delete a glossary term", None, None, 204))),
        Route("/tm/{entry_id}", routes_tm.EntryResource(), auth="admin", openapi=ops(
            patch=("Change an entry's target text, quality, context or source", schemas.TM_PATCH,
                   schemas.TM_ENTRY, 200),
            delete=("Delete an entry", None, None, 204))),
        Route("/site", routes_site.SiteResource(), auth=reads, openapi=ops(
            get=("The site's configuration", None, schemas.SITE, 200),
            patch=("Change some of the site's configuration (\"\" clears a nullable key)", schemas.SITE_PATCH,
                   schemas.SITE, 200))),
        Route("/me/preferences", routes_site.PreferencesResource(), site="optional", openapi=ops(
            get=("The caller's preferences (the same in every site)", None, schemas.PREFERENCES, 200),
            patch=("Merge keys into the caller's preferences (null removes one)", schemas.PREFERENCES,
                   schemas.PREFERENCES, 200))),
        Route("/presets", routes_site.PresetsResource(), openapi=ops(
            get=("View presets and bookmarks the caller sees (optional collection)", None, [schemas.PRESET], 200),
            post=("Create a preset: user scope is self-managed, role or global need admin", schemas.PRESET_BODY,
                  schemas.PRESET, 201))),
        Route("/presets/effective", routes_site.EffectivePresetResource(), openapi=ops(
            get=("The caller's default view of a collection: user, role chain, then global", None,
                 schemas.PRESET, 200))),
        Route("/presets/bookmarks", routes_site.BookmarksResource(), openapi=ops(
            get=("The bookmarks the caller sees", None, [schemas.PRESET], 200))),
        Route("/presets/{preset_id}", routes_site.PresetResource(), openapi=ops(
            get=("One preset the caller sees", None, schemas.PRESET, 200),
            patch=("Change a preset (own, or admin for role and global)", schemas.PRESET_PATCH, schemas.PRESET, 200),
            delete=("Delete a preset (own, or admin for role and global)", None, None, 204))),
        Route("/settings", routes.SettingsResource(), auth=reads, openapi=ops(
            get=("The site's settings (admins: all; others: the public keys)", None, schemas.SETTINGS_MAP, 200),
            patch=("Set several settings at once (null unsets one)", schemas.SETTINGS_MAP,
                   schemas.SETTINGS_MAP, 200))),
        # -- studio41: the declared keys with their types, for the studio's settings screen
        Route("/settings/keys", routes.KeysResource(), auth="admin", openapi=ops(
            get=("The setting keys plugins declare, each with its type (a prefix ends in '.')", None,
                 [schemas.SETTING_KEY], 200))),
        Route("/settings/export", routes.ExportResource(), auth="admin", openapi=ops(
            post=("Export the settings as a bundle (secrets left out)", None, schemas.BUNDLE, 200))),
        Route("/settings/apply", routes.ApplyResource(), auth="admin", openapi=ops(
            post=("Apply a bundle from /settings/export", schemas.BUNDLE, schemas.APPLIED, 200))),
        Route("/settings/{key}", routes.SettingResource(), auth=reads, openapi=ops(
            get=("One setting", None, schemas.SETTING, 200),
            put=("Set one setting (null unsets it)", schemas.PUT_BODY, schemas.SETTING, 200))),
    ]


@hookimpl
def register_sealed_columns(kernel: Any) -> list[Any]:
    """Where this plugin keeps sealed secrets (a secret setting's value): checked at start (kernel/sealed.py)."""
    from plugins.settings.tables import settings as table

    return [table.c.sealed]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """Translation memory and glossary entries quoting the subject; the subject's presets (their
    preferences are the identity's, in no site: they go with it)."""
    from kernel.policy.privacy import rows_target
    from plugins.settings import tables as t

    tm, gl, ps = t.tm_entries, t.glossary, t.presets
    return [rows_target("translationMemory", tm, [tm.c.source_text, tm.c.target_text, tm.c.context],
                        "Translation memory entries whose source, target or context quote the subject."),
            rows_target("glossary", gl, [gl.c.term, gl.c.translation], "Glossary terms quoting the subject."),
            rows_target("presets", ps, [ps.c.bookmark, ps.c.search, ps.c.filter, ps.c.layout_query],
                        "View presets of the subject's accounts, or whose search or filter quote them.",
                        user_column=ps.c.user_id)]
