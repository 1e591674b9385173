"""extensions: signed extension bundles installed, enabled and disabled without a restart.

Tables (``tables.py``, migration ``extensions_0001_extensions``): ``svc_extensions`` and
``svc_extension_keys`` (deployment-wide, like ``svc_sites``), ``svc_extension_sites``
(per site: enabled, granted capabilities, failures).

- **Install** (``service.install``, ``keys``): ``POST /extensions/upload`` (instance admin) takes
  the multipart ``bundle`` and ``signature``; the archive and manifest are checked by the SDK's
  own ``read_manifest``; the signature is verified against ``MARKETPLACE_PUBLIC_KEYS`` merged with
  the stored keys (``/extensions/publisher-keys``) under ``SVC_EXT_SIGNATURE_POLICY``.
- **Enable, disable** (``runtime``, ``host``, ``loader``): per site. Each worker starts a
  confined runner process for the extension (``host``; ``extensions_sdk.runner``, reached only
  through a framed JSON socket pair; ``SVC_EXT_ISOLATION=inline`` imports it in the worker
  instead, with ``loader``) and registers stand-ins of its routes (the kernel's extension sink,
  ``/api/v1/ext/<name>/...``), bus handlers, jobs and flow operations, each undone on unload;
  ``extensions.changed`` on the bus makes every other worker sync. Every load verifies again.
- **Capabilities**: granted per site, enforced by ``kernel.base.sandbox`` (items API, outbound).

Hooks: register_settings, register_error_codes, register_event_handlers
(``extensions.changed``), startup, shutdown, register_routes. Audit actions:
``extensions.install``, ``extensions.enable``, ``extensions.disable``, ``extensions.grant``,
``extensions.uninstall``, ``extensions.key``.
"""
