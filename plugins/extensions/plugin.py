"""The extensions plugin's hooks."""

from __future__ import annotations

from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.base.settings import parse_choice, parse_int
from plugins.extensions import keys, panels, routes, schemas
from plugins.extensions.runtime import CHANGED, runtime

name = "extensions"
requires = ("files", "items", "settings")
ADMIN = "instance-admin"
SITE_ADMIN = "admin"  # -- govern43: within what the instance admin made available


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("MARKETPLACE_PUBLIC_KEYS", (), keys.parse_marketplace_keys,
                "Trusted publisher keys, a comma list of publisher:<base64 raw 32-byte Ed25519 public key>; "
                "stored keys (POST /extensions/publisher-keys) add to them and mark keys official or revoked."),
        Setting("SVC_EXT_SIGNATURE_POLICY", "require", parse_choice("require", "warn"),
                "Third-party bundles whose signature no publisher key verifies: 'require' refuses them, "
                "'warn' installs them flagged unverified. Official (svc-) bundles always fail closed."),
        Setting("SVC_EXT_MAX_FAILURES", 5, parse_int(1),
                "Failures (crashing hooks, routes, jobs) after which an extension is disabled in the site."),
        Setting("SVC_EXT_ISOLATION", "process", parse_choice("process", "inline"),
                "Where extension code runs: 'process' (a confined runner process per extension, reached "
                "only through the channel) or 'inline' (in the server process: development only, unsafe)."),
        Setting("SVC_EXT_CALL_SECONDS", 10, parse_int(1),
                "Wall-clock limit of one call into an extension's runner (a route, handler, job, operation)."),
        Setting("SVC_EXT_MEMORY_MB", 1024, parse_int(64),
                "Address-space limit of an extension's runner process, in MiB."),
        Setting("SVC_EXT_CPU_SECONDS", 3600, parse_int(1),
                "CPU-time limit of an extension's runner process (it is started again past it)."),
        Setting("SVC_EXT_RESTART_MS", 100, parse_int(1),
                "First wait before a crashed extension runner is started again (doubling up to 30 s)."),
        Setting("SVC_EXT_SYNC_SECONDS", 10, parse_int(0),
                "Without Redis: how often each worker re-reads which extensions are enabled (0: never)."),
    ]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {
        "BUNDLE_UNSAFE": (400, "The bundle is a hostile archive (traversal, link, bomb, too many files)."),
        "SIGNATURE_INVALID": (400, "No usable publisher key signs the bundle (policy require, or a revoked key)."),
        "RESERVED_NAMESPACE": (403, "A svc- extension not signed by an official key."),
        "EXTENSION_EXISTS": (409, "An extension of that name is installed."),
        "EXTENSION_BLOCKED": (409, "The extension failed verification at a load and is blocked."),
        "EXTENSION_LOAD_FAILED": (422, "The extension's code could not be loaded."),
        "EXTENSION_FAILED": (500, "An extension's code crashed (a route, flow operation)."),
        "EXTENSION_TIMEOUT": (504, "An extension did not answer within SVC_EXT_CALL_SECONDS."),
        "EXTENSION_UNAVAILABLE": (503, "An extension's runner process is restarting."),
        "EXTENSION_REFUSED": (403, "An extension's runner asked for a call outside its site or grants."),
        "EXTENSION_OUTBOUND_FAILED": (502, "An extension's outbound request could not be made."),
        "CAPABILITY_NOT_REQUESTED": (400, "A grant the extension's manifest does not ask for."),
    }


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    async def changed(event: str, payload: Any, ctx: Any) -> None:
        if ctx.remote:  # the worker that made the change synced already
            await runtime(kernel).sync()

    bus.on_action(CHANGED, changed)


@hookimpl
async def startup(kernel: Any) -> None:
    """Every start verifies and loads what is enabled (a revoked key's extensions stay out)."""
    rt = runtime(kernel)
    await rt.sync()
    every = kernel.settings.get("ext_sync_seconds")
    if not kernel.settings.redis_url and every:
        rt.start_polling(every)


@hookimpl
async def shutdown(kernel: Any) -> None:
    rt = runtime(kernel)
    await rt.stop_polling()
    await rt.drain()
    rt.unload_all()
    await rt.drain()  # the runners' stops


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    upload = ops(post=("Upload a signed extension bundle (multipart bundle, signature)", None,
                       schemas.EXTENSION, 201))
    upload["post"]["responses"]["200"] = {**upload["post"]["responses"]["201"],
                                           "description": "Replaced in place (?replace=true)"}
    upload["post"]["parameters"] = [{
        "name": "replace", "in": "query", "required": False, "schema": {"type": "boolean"},
        "description": "Upgrade an installed extension of the same name in place instead of answering 409"}]
    upload["post"]["requestBody"] = {"required": True,
                                     "content": {"multipart/form-data": {"schema": schemas.UPLOAD_BODY}}}
    ext = schemas.EXTENSION
    return [
        # -- govern43: a site admin lists, reads, enables, disables and grants what the instance
        # admin made available to the site (service._offered); the rest stays the instance admin's.
        Route("/extensions", routes.ExtensionsResource(), site="optional", auth=SITE_ADMIN,
              openapi=ops(get=("Installed extensions (with their state in the site named)", None, [ext], 200))),
        Route("/extensions/upload", routes.UploadResource(), site="none", auth=ADMIN, own_body_cap=True,
              openapi=upload),
        Route("/extensions/ui/manifest", routes.UiManifestResource(), auth="bearer",
              openapi=ops(get=("UI entries of the extensions enabled in the site", None, [schemas.UI_ENTRY],
                               200))),
        # -- ext_ui: a panel's sandboxed document, framed by the studio (panels.py)
        Route("/extensions/ui/panels/{site_id}/{extension}/{panel_id}", panels.PanelResource(), site="path",
              auth="public", openapi={"get": {
                  "summary": "A UI panel's document (HTML, its own strict CSP; framed sandboxed by the studio)",
                  "parameters": [{"name": "lang", "in": "query", "required": False, "schema": {"type": "string"}}],
                  "responses": {"200": {"description": "The panel's document",
                                        "content": {"text/html": {"schema": {"type": "string"}}}}}}}),
        Route("/extensions/publisher-keys", routes.KeysResource(), site="none", auth=ADMIN,
              openapi=ops(get=("Publisher keys: environment and stored", None, [schemas.KEY], 200),
                          post=("Store a publisher key or change its status", schemas.KEY_BODY, schemas.KEY, 201))),
        Route("/extensions/{id}", routes.ExtensionResource(), site="optional", auth=SITE_ADMIN,
              openapi=ops(get=("One installed extension", None, ext, 200),
                          delete=("Uninstall (disabled in every site, unloaded everywhere)", None, None, 204))),
        Route("/extensions/{id}/enable", routes.EnableResource(), auth=SITE_ADMIN,
              openapi=ops(post=("Enable in the site: verified, loaded in every worker", None, ext, 200))),
        Route("/extensions/{id}/disable", routes.DisableResource(), auth=SITE_ADMIN,
              openapi=ops(post=("Disable in the site: unloaded where no site uses it", None, ext, 200))),
        Route("/extensions/{id}/availability", routes.AvailabilityResource(), auth=ADMIN,
              openapi=ops(put=("Offer the extension to the site (or withdraw it) with the most a site admin may "
                               "grant", schemas.AVAILABILITY_BODY, ext, 200))),
        Route("/extensions/{id}/capabilities", routes.CapabilitiesResource(), auth=SITE_ADMIN,
              openapi=ops(post=("Grant capabilities the manifest asks for (replaces the grants)",
                                schemas.CAPABILITIES_BODY, ext, 200))),
    ]
