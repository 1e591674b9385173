"""Publisher keys and the signature verdict of a bundle.

Keys come from ``MARKETPLACE_PUBLIC_KEYS`` (``publisher:<base64 key>``, status ``trusted``)
merged with ``svc_extension_keys``: a stored key adds a key, or overrides the status of the
same (publisher, key) from the environment: ``official`` or ``revoked``. A bundle is
``verified`` when a non-revoked key of the publisher its manifest names signs its bytes;
``official`` when that key is official. ``isOfficial`` is the reserved ``svc-`` namespace AND
an official signature, derived here, never taken from the bundle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from extensions_sdk.bundle import NAME, RESERVED_PREFIX
from kernel.base.errors import ApiError
from kernel.base.signing import SignatureError, check_public_key, verify_bytes
from plugins.extensions.tables import extension_keys

STATUSES = ("trusted", "official", "revoked")


def parse_marketplace_keys(raw: str) -> tuple[tuple[str, str], ...]:
    """``publisher:key,publisher:key`` -> ((publisher, key), ...); ValueError on a bad entry."""
    out: list[tuple[str, str]] = []
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        publisher, sep, key = entry.partition(":")
        if not sep or not NAME.match(publisher.strip()):
            raise ValueError("MARKETPLACE_PUBLIC_KEYS entries are publisher:<base64 Ed25519 public key>")
        try:
            check_public_key(key.strip())
        except SignatureError as exc:
            raise ValueError(f"MARKETPLACE_PUBLIC_KEYS: {publisher.strip()}: {exc}") from None
        out.append((publisher.strip(), key.strip()))
    return tuple(out)


async def load_keys(kernel: Any, conn: Any) -> dict[str, dict[str, str]]:
    """publisher -> {key: status}, the environment's keys overridden by the stored ones."""
    keys: dict[str, dict[str, str]] = {}
    for publisher, key in kernel.settings.get("marketplace_public_keys") or ():
        keys.setdefault(publisher, {})[key] = "trusted"
    rows = (await conn.execute(select(extension_keys.c.publisher, extension_keys.c.public_key,
                                      extension_keys.c.status))).all()
    for publisher, key, status in rows:
        keys.setdefault(publisher, {})[key] = status
    return keys


@dataclass(frozen=True)
class Verdict:
    """``state``: verified | unverified | revoked; ``official``: signed by an official key."""

    state: str
    official: bool
    reason: str


def verdict(keys: dict[str, dict[str, str]], publisher: str, bundle: bytes, signature: str) -> Verdict:
    revoked = False
    for key, status in sorted((keys.get(publisher) or {}).items()):
        try:
            verify_bytes(key, bundle, signature)
        except SignatureError:
            continue
        if status == "revoked":
            revoked = True
            continue
        return Verdict("verified", status == "official", f"signed by a {status} key of {publisher!r}")
    if revoked:
        return Verdict("revoked", False, f"signed by a revoked key of {publisher!r}")
    if not keys.get(publisher):
        return Verdict("unverified", False, f"no key is known for publisher {publisher!r}")
    return Verdict("unverified", False, f"no key of publisher {publisher!r} signs this bundle")


def admit(manifest: dict[str, Any], found: Verdict, policy: str) -> tuple[str, bool]:
    """(signature state, isOfficial) to record, or the refusal: official bundles fail closed,
    a reserved name needs an official signature, a revoked key is refused whatever the policy,
    an unverified third-party bundle is refused under ``require`` and flagged under ``warn``."""
    reserved = manifest["name"].startswith(RESERVED_PREFIX)
    if reserved and not (found.state == "verified" and found.official):
        raise ApiError(403, "RESERVED_NAMESPACE",
                       f"The '{RESERVED_PREFIX}' namespace is reserved for official extensions signed by an "
                       f"official key ({found.reason})")
    if found.state == "revoked":
        raise ApiError(400, "SIGNATURE_INVALID", f"The bundle is {found.reason}")
    if found.state != "verified":
        if policy != "warn":
            raise ApiError(400, "SIGNATURE_INVALID", f"The bundle's signature is not accepted: {found.reason}")
        return "unverified", False
    return "verified", reserved and found.official
