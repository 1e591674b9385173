"""Identifiers: UUIDv7 (time-ordered, so new rows append to indexes instead of scattering)."""

from __future__ import annotations

import os
import time
import uuid


def uuid7() -> str:
    """A UUIDv7 string (RFC 9562): 48-bit Unix milliseconds, version, 74 random bits."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))
