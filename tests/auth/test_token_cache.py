"""The verified-token cache of kernel.auth.tokens: a hit still expires on time, and answers only
for the secret that verified the token."""

from __future__ import annotations

import time

import pytest

from kernel.auth import tokens
from kernel.base.errors import ApiError


def test_cached_token_expires_and_needs_its_secret(monkeypatch):
    token = tokens.issue_access_token("a" * 32, user_id="u1", site_id=None, token_version=1, ttl=60)
    assert tokens.decode_access_token("a" * 32, token)["sub"] == "u1"
    assert token in tokens._VERIFIED
    assert tokens.peek_issuer(token) == tokens.ISSUER
    # Another secret (rotated JWT_SECRET) does not take the cached answer.
    with pytest.raises(ApiError) as wrong:
        tokens.decode_access_token("b" * 32, token)
    assert wrong.value.code == "UNAUTHENTICATED"
    # A caller's change to the claims does not reach the cache.
    tokens.decode_access_token("a" * 32, token)["sub"] = "u2"
    assert tokens.decode_access_token("a" * 32, token)["sub"] == "u1"
    # Past exp, the cached token is expired like a fresh decode would say, and forgotten.
    later = time.time() + 61
    monkeypatch.setattr(tokens.time, "time", lambda: later)
    with pytest.raises(ApiError) as expired:
        tokens.decode_access_token("a" * 32, token)
    assert expired.value.code == "TOKEN_EXPIRED" and token not in tokens._VERIFIED
