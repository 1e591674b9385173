"""``GET /config/export`` and ``POST /config/import`` (site admins)."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import flag_param, read_json, send_data
from kernel.http.middleware import request_context
from kernel.messaging.bus import EventContext
from plugins.schema.config import manifest, manifest_apply
from plugins.schema.config.manifest_hooks import sections
from plugins.schema.snapshot import load_snapshot


def choice_param(req: Any, name: str, choices: tuple[str, ...], default: str) -> str:
    """A query parameter that must be one of ``choices`` (absent or empty: ``default``)."""
    raw = req.get_param(name)
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise ApiError.validation(f"'{name}' must be one of {', '.join(choices)}", path=["query", name])
    return raw


class ConfigExportResource:
    """``GET /config/export?scope=all|schema|settings|webhooks``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        scope = choice_param(req, "scope", manifest.EXPORT_SCOPES, "all")
        async with request_context(req).reader() as db:
            data = await manifest.export_manifest(await load_snapshot(db), db, sections(self.kernel), scope)
        send_data(resp, data)


class ConfigImportResource:
    """``POST /config/import?mode=...&dryRun=true&allowDestructive=true``; the body is a manifest."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        mode = choice_param(req, "mode", manifest_apply.MODES, "merge")
        dry_run = flag_param(req, "dryRun")
        allow = flag_param(req, "allowDestructive")
        providers = sections(self.kernel)
        parsed = manifest.parse_manifest(await read_json(req), providers)
        if dry_run:
            async with ctx.reader() as db:
                event_ctx = EventContext(site_id=ctx.site_id, principal=ctx.principal, kernel=self.kernel,
                                         conn=db.conn, request_id=ctx.request_id)
                data = await manifest_apply.dry_run(self.kernel, db, event_ctx, parsed, mode, providers)
        else:
            # -- govern43: the apply in GET /work (a refusal ends it failed with the API's message)
            async with self.kernel.work.tracked(ctx.site_id, "import", "Config import", ctx.principal):
                async with ctx.unit_of_work() as uow:
                    data = await manifest_apply.apply_manifest(uow, parsed, mode, providers, allow_destructive=allow)
        send_data(resp, data)
