"""Ed25519 detached signatures over bundle bytes (``cryptography``), keys as base64.

The one module that makes and checks signatures: the extensions plugin verifies uploads with it,
and the extension SDK (``extensions_sdk.signing`` re-exports it) signs bundles with it.

A private key is the raw 32-byte seed, a public key the raw 32-byte key, a signature 64 bytes;
all three travel as base64 (docs/extensions.md: ``MARKETPLACE_PUBLIC_KEYS`` entries are
``publisher:<base64 of the raw 32-byte Ed25519 public key>``).
"""

from __future__ import annotations

import base64
import binascii

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat


class SignatureError(ValueError):
    """A key or signature is malformed, or the signature does not match."""


def _b64decode(value: str, what: str, size: int) -> bytes:
    try:
        raw = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(f"{what} is not valid base64") from exc
    if len(raw) != size:
        raise SignatureError(f"{what} must be {size} bytes, got {len(raw)}")
    return raw


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def generate_keypair() -> tuple[str, str]:
    """A new (private seed, public key) pair, both base64."""
    key = Ed25519PrivateKey.generate()
    seed = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return _b64(seed), _b64(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))


def public_key_of(private_key_b64: str) -> str:
    """The base64 public key of a base64 private seed."""
    key = Ed25519PrivateKey.from_private_bytes(_b64decode(private_key_b64, "private key", 32))
    return _b64(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))


def sign_bytes(private_key_b64: str, data: bytes) -> str:
    """The detached signature of ``data``, base64."""
    key = Ed25519PrivateKey.from_private_bytes(_b64decode(private_key_b64, "private key", 32))
    return _b64(key.sign(data))


def check_public_key(public_key_b64: str) -> bytes:
    """The raw 32 bytes of a base64 public key; ``SignatureError`` when malformed."""
    raw = _b64decode(public_key_b64, "public key", 32)
    try:
        Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        raise SignatureError("public key is not an Ed25519 key") from exc
    return raw


def verify_bytes(public_key_b64: str, data: bytes, signature_b64: str) -> None:
    """Raise ``SignatureError`` unless ``signature_b64`` signs ``data`` for the key."""
    key = Ed25519PublicKey.from_public_bytes(check_public_key(public_key_b64))
    try:
        key.verify(_b64decode(signature_b64, "signature", 64), data)
    except InvalidSignature as exc:
        raise SignatureError("signature does not match the bundle") from exc
