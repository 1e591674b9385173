"""UI panels: ``GET /extensions/ui/panels/{site_id}/{extension}/{panel}``, the document of one panel
that an extension's UI manifest declares (``{ id, type: "panel", label, source }``).

The studio shows it in ``<iframe sandbox="allow-scripts">`` (no ``allow-same-origin``), so the
panel runs in an opaque origin: it cannot read the studio's page, storage or token. This route
adds its own walls, which hold even when the URL is opened on its own:

- the panel's script is served inline in a document we write, and the policy allows that script
  by its hash and nothing else: no other script, no fetch, no form, no image but ``data:``;
- the policy's ``sandbox allow-scripts`` makes the document opaque whoever frames it, and
  ``frame-ancestors 'self'`` lets only the studio's origin frame it.

The panel talks to the studio by ``postMessage`` only; the studio answers what the extension's
grants allow (plugins/studio/app/ext_panel.js, docs/extensions.md#ui-panels).

A browser's frame cannot send headers, so the site is in the path (``Route(site="path")``) and the
route is public: the document is the extension's code, not data. It answers 404 unless the
extension is installed, enabled in that site, granted ``ui`` there and declares the panel.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import zipfile
from collections import OrderedDict
from io import BytesIO
from typing import Any

from sqlalchemy import select

from extensions_sdk.bundle import panel_source
from kernel.base.errors import ApiError
from kernel.http.middleware import request_context
from plugins.extensions.tables import extension_sites, extensions

PANELS_PATH = "/extensions/ui/panels"
CSP = (
    "default-src 'none'; script-src '{script}'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox allow-scripts"
)
LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
CACHED = 64  # panel scripts kept in memory, by bundle digest and source path
_scripts: OrderedDict[tuple[str, str], str] = OrderedDict()


def panel_url(api_prefix: str, site_id: str, extension: str, panel: str) -> str:
    """The path the studio frames (the UI manifest's ``src``)."""
    return f"{api_prefix}{PANELS_PATH}/{site_id}/{extension}/{panel}"


def document(label: str, language: str, script: str) -> tuple[bytes, str]:
    """(the panel's HTML, its Content-Security-Policy): the script inline, allowed by its hash."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    page = (
        "<!doctype html>\n"
        f'<html lang="{html.escape(language)}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(label)}</title></head>\n"
        f'<body><script type="module">{script}</script></body></html>\n'
    )
    return page.encode("utf-8"), CSP.format(script=f"sha256-{digest}")


def _not_found(extension: str, panel: str) -> ApiError:
    return ApiError.not_found(f"No panel '{panel[:64]}' of extension '{extension[:64]}' in this site")


async def _script(conn: Any, ext_id: str, sha256: str, entry: dict[str, Any]) -> str:
    key = (sha256, entry["source"])
    if key in _scripts:
        _scripts.move_to_end(key)
        return _scripts[key]
    bundle = (await conn.execute(select(extensions.c.bundle).where(extensions.c.id == ext_id))).scalar_one()
    with zipfile.ZipFile(BytesIO(bundle)) as archive:  # checked at upload (read_manifest)
        by_name = {i.filename: i for i in archive.infolist()}
        text = panel_source(archive, by_name, entry, ["ui", entry["id"]])
    _scripts[key] = text
    while len(_scripts) > CACHED:
        _scripts.popitem(last=False)
    return text


async def panel(ctx: Any, extension: str, panel_id: str, language: str = "en") -> tuple[bytes, str]:
    """The document of ``panel_id`` of ``extension`` in the request's site, and its policy;
    ``language`` is its ``lang`` (the studio's language)."""
    async with ctx.kernel.db.connect() as conn:
        row = (
            await conn.execute(
                select(extensions.c.id, extensions.c.sha256, extensions.c.manifest, extension_sites.c.granted)
                .join(extension_sites, extension_sites.c.extension_id == extensions.c.id)
                .where(
                    extensions.c.name == extension[:64],
                    extensions.c.status == "installed",
                    extension_sites.c.site_id == ctx.site_id,
                    extension_sites.c.enabled.is_(True),
                )
            )
        ).first()
        if row is None or "ui" not in (row.granted or ()):
            raise _not_found(extension, panel_id)
        entry = next(
            (e for e in row.manifest.get("ui") or () if e.get("id") == panel_id and e.get("source")), None
        )
        if entry is None:
            raise _not_found(extension, panel_id)
        script = await _script(conn, row.id, row.sha256, entry)
    return document(entry["label"], language if LANGUAGE.match(language) else "en", script)


class PanelResource:
    """``GET /extensions/ui/panels/{site_id}/{extension}/{panel}``: a panel's sandboxed document."""

    async def on_get(self, req: Any, resp: Any, site_id: str, extension: str, panel_id: str) -> None:
        language = req.get_param("lang") or "en"
        data, policy = await panel(request_context(req), extension, panel_id, language)
        resp.content_type = "text/html; charset=utf-8"
        resp.set_header("Content-Security-Policy", policy)
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("Referrer-Policy", "no-referrer")
        resp.set_header("Cross-Origin-Resource-Policy", "same-origin")
        resp.set_header("Cache-Control", "no-store")  # enablement and grants may change at any time
        resp.data = data
