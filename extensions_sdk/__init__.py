"""svc extensions SDK: what third-party authors build against.

An extension imports only from here (``examples/extensions/word-count`` does, and a test checks
that no example imports ``plugins`` or ``kernel``):

- the plugin surface: ``hookimpl``, ``Route``, ``ops``, ``RateBucket``, ``Setting``, ``ApiError``,
  ``Principal``, ``EventContext``;
- requests and responses: ``request_context(req)`` (who calls, in which site: the ``ctx`` the
  items API takes), ``read_json(req)``, ``send_data(resp, data, status=...)``,
  ``send_no_content(resp)``;
- outbound HTTP: ``outbound.get(url)``, ``outbound.post(url, json_body=...)``,
  ``outbound.request(...)`` (in the runner process; ``network`` must be granted);
- logging: ``await log.info(message)`` (``warning``, ``error``), a line in the server's log;
- settings and files (in the runner process): ``await settings.get(ctx, key, default)`` and
  ``settings.set(ctx, key, value)`` for the keys the manifest declares (``settings`` granted);
  ``files.get``, ``files.list``, ``files.read``, ``files.upload`` (``files`` granted);
- content: ``items``, the items API (``items.read``, ``items.list_items``, ``items.create``,
  ``items.update``, ``items.query``...), checked against the site's grants (``items:<collection>``);
- flow operations: ``Operation``, ``Option`` (an option's declared type), ``OptionError``;
- bundles: manifest validation, building, compiling and Ed25519 signing (``svc-ext new|keygen|
  build|sign|verify|deploy``).

The names that live in plugins (``items``, ``Operation``, ``Option``, ``OptionError``) load on first use, so
``svc-ext`` starts without the server's plugins. Test fixtures come from the ``svc`` pytest
plugin (``kernel.testing``), installed with svc-cms.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from extensions_sdk.bundle import build_bundle, compile_package, read_manifest, validate_manifest
from kernel import ApiError, Principal, Route, hookimpl, ops

# name -> (module, attribute or None for the module itself), imported on first use: an
# extension's runner then loads neither the bus (Redis's client) nor the settings and signing
# (cryptography) unless the extension asks for them (docs/decisions/extension-runners.md).
_LAZY = {
    "EventContext": ("kernel.messaging.bus", "EventContext"),
    "RateBucket": ("kernel.http.ratelimit", "RateBucket"),
    "Setting": ("kernel.base.settings", "Setting"),
    "generate_keypair": ("extensions_sdk.signing", "generate_keypair"),
    "sign_bytes": ("extensions_sdk.signing", "sign_bytes"),
    "verify_bytes": ("extensions_sdk.signing", "verify_bytes"),
    "items": ("plugins.items.api", None),
    "Operation": ("plugins.flows.api", "Operation"),
    "Option": ("plugins.flows.api", "Option"),
    "OptionError": ("plugins.flows.api", "OptionError"),
    "request_context": ("kernel.http.middleware", "request_context"),
    "read_json": ("kernel.http.media", "read_json"),
    "send_data": ("kernel.http.media", "send_data"),
    "send_no_content": ("kernel.http.media", "send_no_content"),
}

__all__ = [
    "ApiError", "EventContext", "Operation", "Option", "OptionError", "Principal", "RateBucket", "Route", "Setting",
    "build_bundle", "compile_package", "generate_keypair", "hookimpl", "items", "ops", "read_json",
    "read_manifest", "request_context", "send_data", "send_no_content", "sign_bytes", "validate_manifest",
    "verify_bytes", "outbound", "log", "settings", "files",
]


class _Log:
    """``log`` outside a runner (``SVC_EXT_ISOLATION=inline``, tests): the ``svc.ext`` logger."""

    async def info(self, message: str) -> None:
        logging.getLogger("svc.ext").info("%s", message)

    async def warning(self, message: str) -> None:
        logging.getLogger("svc.ext").warning("%s", message)

    async def error(self, message: str) -> None:
        logging.getLogger("svc.ext").error("%s", message)


log: Any = _Log()


def enter_runner(items: Any, outbound: Any, log: Any, settings: Any, files: Any) -> None:
    """In an extension's runner process (``extensions_sdk.runner``): ``items``, ``outbound``,
    ``log``, ``settings`` and ``files`` go through the channel to the server, ``request_context``
    and ``read_json`` read the runner's request, and ``send_data`` and ``send_no_content`` shape its
    response (as ``kernel.http.media``'s do, without loading the server's HTTP stack). Authors see
    the same names either way."""
    async def read_json(req: Any) -> Any:
        body = await req.get_media(default_when_empty=None)
        if not isinstance(body, dict):
            raise ApiError.validation("A JSON object body is required", path=["body"])
        return body

    def send_data(resp: Any, data: Any, *, status: int = 200, meta: Any = None) -> None:
        resp.status = status
        resp.media = {"data": data} if meta is None else {"data": data, "meta": meta}

    def send_no_content(resp: Any) -> None:
        resp.status, resp.content_type, resp.data = 204, None, None

    globals().update(items=items, outbound=outbound, log=log, settings=settings, files=files,
                     request_context=lambda req: req.context.svc, read_json=read_json, send_data=send_data,
                     send_no_content=send_no_content)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'extensions_sdk' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value
