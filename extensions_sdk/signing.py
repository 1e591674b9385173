"""Ed25519 detached signatures over bundle bytes (PyNaCl), keys as base64."""

from __future__ import annotations

import base64
import binascii

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey


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


def generate_keypair() -> tuple[str, str]:
    """A new (private seed, public key) pair, both base64."""
    key = SigningKey.generate()
    return base64.b64encode(bytes(key)).decode(), base64.b64encode(bytes(key.verify_key)).decode()


def sign_bytes(private_key_b64: str, data: bytes) -> str:
    """The detached signature of ``data``, base64."""
    key = SigningKey(_b64decode(private_key_b64, "private key", 32))
    return base64.b64encode(key.sign(data).signature).decode()


def verify_bytes(public_key_b64: str, data: bytes, signature_b64: str) -> None:
    """Raise ``SignatureError`` unless ``signature_b64`` signs ``data`` for the key."""
    key = VerifyKey(_b64decode(public_key_b64, "public key", 32))
    try:
        key.verify(data, _b64decode(signature_b64, "signature", 64))
    except BadSignatureError as exc:
        raise SignatureError("signature does not match the bundle") from exc
