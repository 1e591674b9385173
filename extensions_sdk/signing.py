"""Ed25519 signatures of bundles: the SDK's name for ``kernel.base.signing``, the one module that
signs (here, ``svc-ext sign``) and verifies (the extensions plugin, at upload)."""

from __future__ import annotations

from kernel.base.signing import (
    SignatureError,
    check_public_key,
    generate_keypair,
    public_key_of,
    sign_bytes,
    verify_bytes,
)

__all__ = [
    "SignatureError",
    "check_public_key",
    "generate_keypair",
    "public_key_of",
    "sign_bytes",
    "verify_bytes",
]
