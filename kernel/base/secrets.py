"""Secrets at rest: seal and open stored secrets with AES-256-GCM, bound to their site.

``kernel.secrets.seal(site_id, value)`` returns a short text token to store in any string or
JSON column; ``kernel.secrets.open(site_id, token)`` gives the value back. Every secret a
feature stores (webhook secrets, store-sync credentials, git tokens, ...) goes through this.

The token is ``sv1.<key id>.<base64url(nonce || ciphertext || tag)>``:

- ``sv1`` is the format version, so a later format can sit beside this one;
- the key id names the key that sealed it, so several keys can be loaded at once and a token
  sealed with a retired key still opens (rotation: ``needs_reseal`` and ``reseal``);
- a fresh 96-bit random nonce per seal (NIST SP 800-38D's limit of 2^32 seals per key is far
  away for stored secrets);
- the associated data binds the version, the key id, the site and an optional ``purpose``
  (``"webhook.secret"``): a token copied to another site, or to another column of the same
  site, does not open.

Keys come from ``SVC_ENCRYPTION_KEY`` (the active key) and ``SVC_ENCRYPTION_KEYS`` (more keys that
still open what they sealed). Each entry is the base64 of 32 random bytes, optionally prefixed by
an id: ``<id>:<base64>``. Without an id, the key's id is derived from it (the first 12 hex digits
of a SHA-256 of the key), so the same key always has the same id on every worker.

Without any key, ``seal``/``open`` and ``require()`` raise 400 ``ENCRYPTION_KEY_REQUIRED``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kernel.base.errors import ApiError, SettingsError

if TYPE_CHECKING:
    from kernel.base.settings import Settings

VERSION = "sv1"
KEY_BYTES = 32
NONCE_BYTES = 12
KEY_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
REQUIRED_CODE = "ENCRYPTION_KEY_REQUIRED"
ACTIVE_ENV = "SVC_ENCRYPTION_KEY"
MORE_ENV = "SVC_ENCRYPTION_KEYS"


class SecretError(Exception):
    """A token could not be opened: malformed, sealed for another site or purpose, tampered
    with, or sealed with a key that is not loaded. The message never contains the secret."""


def derived_key_id(key: bytes) -> str:
    """The id of an unnamed key: stable across workers, reveals nothing useful about the key."""
    return hashlib.sha256(b"svc encryption key id\0" + key).hexdigest()[:12]


def parse_key_entry(raw: str) -> tuple[str, bytes]:
    """``[<id>:]<base64 of 32 bytes>`` -> ``(key id, key)``; ``ValueError`` says what is wrong."""
    text = raw.strip()
    key_id, sep, material = text.rpartition(":")
    if sep and not KEY_ID.match(key_id):
        raise ValueError(f"key id {key_id[:40]!r} must be 1-32 letters, digits, '_' or '-'")
    try:
        key = base64.b64decode(material.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("must be base64 (optionally '<id>:<base64>')") from exc
    if len(key) != KEY_BYTES:
        raise ValueError(f"must decode to {KEY_BYTES} bytes, got {len(key)}")
    return (key_id if sep else derived_key_id(key)), key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Secrets:
    """The app's keyring: ``kernel.secrets``. Holds AES-GCM keys; never prints them."""

    def __init__(self, keys: Iterable[tuple[str, bytes]] = (), active: str | None = None) -> None:
        self._keys: dict[str, AESGCM] = {}
        for key_id, key in keys:
            if not KEY_ID.match(key_id):
                raise ValueError(f"key id {key_id!r} is not valid")
            if len(key) != KEY_BYTES:
                raise ValueError(f"key {key_id!r} must be {KEY_BYTES} bytes")
            self._keys[key_id] = AESGCM(key)
        if active is not None and active not in self._keys:
            raise ValueError(f"the active key {active!r} is not loaded")
        self.active_key_id = active

    def __repr__(self) -> str:
        return f"<Secrets active={self.active_key_id!r} keys={sorted(self._keys)}>"

    @classmethod
    def from_settings(cls, settings: Settings) -> Secrets:
        """The keyring of ``SVC_ENCRYPTION_KEY`` and ``SVC_ENCRYPTION_KEYS``; bad values raise
        ``SettingsError`` naming the variable (at boot)."""
        active_raw: str = settings.get("encryption_key") or ""
        more_raw: tuple[str, ...] = tuple(settings.get("encryption_keys") or ())
        if more_raw and not active_raw:
            raise SettingsError(f"{MORE_ENV} is set but {ACTIVE_ENV} is not: set the active key "
                                f"in {ACTIVE_ENV} (the keys in {MORE_ENV} only open older secrets)")
        keys: dict[str, bytes] = {}
        active = None
        for env, entries in ((ACTIVE_ENV, (active_raw,) if active_raw else ()), (MORE_ENV, more_raw)):
            for n, entry in enumerate(entries):
                try:
                    key_id, key = parse_key_entry(entry)
                except ValueError as exc:
                    where = env if env == ACTIVE_ENV else f"{env} (entry {n + 1})"
                    raise SettingsError(f"{where} is not valid: {exc}") from None
                if key_id in keys and keys[key_id] != key:
                    raise SettingsError(f"{env} gives the key id {key_id!r} to two different keys")
                keys[key_id] = key
                if env == ACTIVE_ENV:
                    active = key_id
        return cls(keys.items(), active)

    # ------------------------------------------------------------------ state

    @property
    def available(self) -> bool:
        """Whether secrets can be sealed (an active key is set)."""
        return self.active_key_id is not None

    @property
    def key_ids(self) -> list[str]:
        """Every loaded key id, the active one first."""
        rest = sorted(k for k in self._keys if k != self.active_key_id)
        return ([self.active_key_id] if self.active_key_id else []) + rest

    def require(self) -> None:
        """Raise 400 ``ENCRYPTION_KEY_REQUIRED`` when no key is set: call it before a feature
        accepts a secret, so the client learns before anything is written."""
        if self.active_key_id is None:
            raise ApiError(400, REQUIRED_CODE, f"This feature stores secrets and needs an encryption key: "
                                               f"the operator sets {ACTIVE_ENV}")

    # ------------------------------------------------------------------ sealing

    @staticmethod
    def _aad(key_id: str, site_id: str | None, purpose: str) -> bytes:
        # A JSON array: unambiguous whatever the site id or purpose contain.
        scope = "instance" if site_id is None else f"site:{site_id}"
        return json.dumps([VERSION, key_id, scope, purpose], separators=(",", ":")).encode("utf-8")

    def seal(self, site_id: str | None, value: str | bytes, *, purpose: str = "",
             key_id: str | None = None) -> str:
        """Encrypt ``value`` for ``site_id`` (``None``: an instance-level secret) with the active
        key (or ``key_id``, a loaded key); returns the token to store."""
        self.require()
        kid = key_id or self.active_key_id
        assert kid is not None
        aead = self._keys.get(kid)
        if aead is None:
            raise ValueError(f"no key {kid!r} is loaded")
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        nonce = os.urandom(NONCE_BYTES)
        sealed = aead.encrypt(nonce, data, self._aad(kid, site_id, purpose))
        return f"{VERSION}.{kid}.{_b64(nonce + sealed)}"

    def open_bytes(self, site_id: str | None, token: str, *, purpose: str = "") -> bytes:
        """Decrypt a token sealed for ``site_id`` and ``purpose``; ``SecretError`` otherwise."""
        if not self._keys:
            self.require()
        kid = self.key_id_of(token)
        aead = self._keys.get(kid)
        if aead is None:
            raise SecretError(f"the secret was sealed with key {kid!r}, which is not loaded "
                              f"({ACTIVE_ENV} / {MORE_ENV})")
        try:
            blob = _unb64(token.split(".", 2)[2])
        except (binascii.Error, ValueError):
            raise SecretError("the sealed secret is not valid base64url") from None
        if len(blob) < NONCE_BYTES + 16:
            raise SecretError("the sealed secret is too short")
        try:
            return aead.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], self._aad(kid, site_id, purpose))
        except InvalidTag:
            raise SecretError("the sealed secret does not open: another site or purpose, "
                              "or it was altered") from None

    def open(self, site_id: str | None, token: str, *, purpose: str = "") -> str:
        """Decrypt a token sealed from a string (UTF-8)."""
        return self.open_bytes(site_id, token, purpose=purpose).decode("utf-8")

    # ------------------------------------------------------------------ rotation

    @staticmethod
    def key_id_of(token: str) -> str:
        """The id of the key that sealed ``token``; ``SecretError`` when it is not a token."""
        parts = token.split(".", 2) if isinstance(token, str) else []
        if len(parts) != 3 or parts[0] != VERSION or not KEY_ID.match(parts[1]):
            raise SecretError(f"not a sealed secret (expected '{VERSION}.<key id>.<data>')")
        return parts[1]

    @staticmethod
    def is_sealed(value: object) -> bool:
        """Whether ``value`` looks like a token of this module (for stores migrating to it)."""
        if not isinstance(value, str):
            return False
        parts = value.split(".", 2)
        return len(parts) == 3 and parts[0] == VERSION and bool(KEY_ID.match(parts[1]))

    def needs_reseal(self, token: str) -> bool:
        """Whether ``token`` was sealed with another key than the active one."""
        return self.key_id_of(token) != self.active_key_id

    def reseal(self, site_id: str | None, token: str, *, purpose: str = "") -> str:
        """``token`` sealed again with the active key (the same token when it already is)."""
        if not self.needs_reseal(token):
            return token
        return self.seal(site_id, self.open_bytes(site_id, token, purpose=purpose), purpose=purpose)
