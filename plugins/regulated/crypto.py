"""Envelope encryption of sensitive values: data keys per item, wrapped by ``kernel.secrets``.

- A data key is 32 random bytes, one per item (so erasing one item's data is destroying one
  key: crypto-shredding). It is stored wrapped: ``kernel.secrets.seal(site, key, purpose=
  "regulated.dek:<collection>:<item>", key_id=<the site's active key-encryption key>)``, so a
  wrapped key copied to another site, item or collection does not open (AES-GCM associated data).
- A value is ``renc1.<base64url(nonce || ciphertext || tag)>``: AES-256-GCM under the item's
  data key, a fresh 96-bit nonce, associated data ``["renc1", site, collection, item, field]``:
  a value moved to another field, item or site fails to open (``DECRYPTION_FAILED``).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kernel.base.secrets import SecretError

PREFIX = "renc1."
DEK_BYTES = 32
NONCE_BYTES = 12
ALGORITHM = "AES-256-GCM"


class DecryptionFailed(Exception):
    """A value or a data key did not open (never carries the value)."""


def is_token(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def dek_purpose(collection: str, item_id: str) -> str:
    return f"regulated.dek:{collection}:{item_id}"


def new_dek() -> bytes:
    return os.urandom(DEK_BYTES)


def wrap(secrets: Any, site_id: str, collection: str, item_id: str, dek: bytes, key_id: str) -> str:
    return secrets.seal(site_id, dek, purpose=dek_purpose(collection, item_id), key_id=key_id)


def unwrap(secrets: Any, site_id: str, collection: str, item_id: str, wrapped: str) -> bytes:
    try:
        return secrets.open_bytes(site_id, wrapped, purpose=dek_purpose(collection, item_id))
    except SecretError as exc:
        raise DecryptionFailed(str(exc)) from None


def _aad(site_id: str, collection: str, item_id: str, field: str) -> bytes:
    return json.dumps(["renc1", site_id, collection, item_id, field], separators=(",", ":")).encode()


def cipher(dek: bytes | AESGCM) -> AESGCM:
    return dek if isinstance(dek, AESGCM) else AESGCM(dek)


def encrypt(dek: bytes, site_id: str, collection: str, item_id: str, field: str, value: str) -> str:
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(dek).encrypt(nonce, value.encode("utf-8"), _aad(site_id, collection, item_id, field))
    return PREFIX + base64.urlsafe_b64encode(nonce + sealed).rstrip(b"=").decode("ascii")


def decrypt(dek: bytes | AESGCM, site_id: str, collection: str, item_id: str, field: str, token: str) -> str:
    """``dek``: the data key, or its ``AESGCM`` object (``cipher``) when many values share it."""
    text = token[len(PREFIX):]
    try:
        blob = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if len(blob) < NONCE_BYTES + 16:
            raise DecryptionFailed("the value is too short")
        plain = cipher(dek).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], _aad(site_id, collection, item_id, field))
        return plain.decode("utf-8")
    except (binascii.Error, ValueError, InvalidTag, UnicodeDecodeError):
        raise DecryptionFailed("the value does not open under this item's data key") from None
