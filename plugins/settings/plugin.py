"""Hook implementations of the settings plugin (its table of contents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.settings import parse_int
from plugins.settings import hookspecs, routes, schemas, store

name = "settings"
requires = ("access",)


@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(hookspecs)


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_SETTINGS_MAX_VALUE_BYTES", 65_536, parse_int(64),
                "Largest JSON value of one site setting, in bytes (declared or not)."),
        Setting("SVC_SETTINGS_MAX_KEYS", 1_000, parse_int(1), "Most settings one site may hold."),
    ]


@hookimpl
def register_migrations() -> str:
    return str(Path(__file__).resolve().parent / "migrations")


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [store.SETTINGS_CACHE]


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    reads = {"GET": "bearer", "*": "admin"}
    return [
        Route("/settings", routes.SettingsResource(), auth=reads, openapi=ops(
            get=("The site's settings (admins: all; others: the public keys)", None, schemas.SETTINGS_MAP, 200),
            patch=("Set several settings at once (null unsets one)", schemas.SETTINGS_MAP,
                   schemas.SETTINGS_MAP, 200))),
        Route("/settings/export", routes.ExportResource(), auth="admin", openapi=ops(
            post=("Export the settings as a bundle (secrets left out)", None, schemas.BUNDLE, 200))),
        Route("/settings/apply", routes.ApplyResource(), auth="admin", openapi=ops(
            post=("Apply a bundle from /settings/export", schemas.BUNDLE, schemas.APPLIED, 200))),
        Route("/settings/{key}", routes.SettingResource(), auth=reads, openapi=ops(
            get=("One setting", None, schemas.SETTING, 200),
            put=("Set one setting (null unsets it)", schemas.PUT_BODY, schemas.SETTING, 200))),
    ]
