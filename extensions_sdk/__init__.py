"""svc extensions SDK: what third-party authors build against.

Re-exports the kernel's public surface (``hookimpl``, ``Route``, ``RateBucket``, ``ApiError``,
``Setting``, ``ops``, ``Principal``, ``EventContext``), manifest validation, bundle building and Ed25519
signing (``svc-ext keygen|build|sign|verify``). Test fixtures come from the ``svc`` pytest
plugin (``kernel.testing``), installed with svc-cms.
"""

from extensions_sdk.bundle import build_bundle, read_manifest, validate_manifest
from extensions_sdk.signing import generate_keypair, sign_bytes, verify_bytes
from kernel import ApiError, EventContext, Principal, RateBucket, Route, Setting, hookimpl, ops

__all__ = [
    "ApiError", "EventContext", "Principal", "RateBucket", "Route", "Setting", "build_bundle", "generate_keypair", "hookimpl",
    "ops", "read_manifest", "sign_bytes", "validate_manifest", "verify_bytes",
]
