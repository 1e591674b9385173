"""The unsubscribe token: HS256 only, exact claims, its own audience and type, never
interchangeable with an access token signed by the same JWT_SECRET (pure functions, no app)."""

from __future__ import annotations

import base64
import json

import jwt
import pytest

from kernel import ApiError
from kernel.auth.tokens import decode_access_token, issue_access_token
from plugins.email import tokens

SECRET = "s" * 64


def _b64(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def _refused(token) -> None:
    with pytest.raises(ApiError) as caught:
        tokens.verify(SECRET, token)
    assert caught.value.status == 400 and caught.value.code == "VALIDATION_FAILED"


def test_round_trip_lowercases_and_binds_the_site():
    token = tokens.issue(SECRET, "shop", "Ann@Example.com")
    assert tokens.verify(SECRET, token) == ("shop", "ann@example.com")
    assert jwt.get_unverified_header(token)["typ"] == "unsubscribe+jwt"
    _refused(tokens.issue("another-secret-" * 3, "shop", "ann@example.com"))


@pytest.mark.parametrize("alg", ["none", "None", "NONE", "nOnE"])
def test_alg_none_in_any_spelling_is_refused(alg):
    claims = {"siteId": "shop", "email": "a@example.com", "aud": tokens.AUDIENCE}
    _refused(f"{_b64({'alg': alg, 'typ': tokens.HEADER_TYPE})}.{_b64(claims)}.")
    _refused(f"{_b64({'alg': alg, 'typ': tokens.HEADER_TYPE})}.{_b64(claims)}")


def test_other_algorithms_claims_and_shapes_are_refused():
    good = {"siteId": "shop", "email": "a@example.com", "aud": tokens.AUDIENCE}
    headers = {"typ": tokens.HEADER_TYPE}
    _refused(jwt.encode(good, SECRET, algorithm="HS512", headers=headers))
    _refused(jwt.encode(good, SECRET, algorithm="HS256"))  # no typ header
    for claims in ({**good, "siteId": 5}, {**good, "email": ["a@example.com"]}, {**good, "email": "A@example.com"},
                   {**good, "siteId": "../x"}, {**good, "aud": "svc"}, {**good, "extra": 1},
                   {k: v for k, v in good.items() if k != "email"}, {k: v for k, v in good.items() if k != "aud"},
                   {**good, "exp": 1}):
        _refused(jwt.encode(claims, SECRET, algorithm="HS256", headers=headers))
    for junk in (None, 5, "", "a.b.c", "x" * 5000, ["t"]):
        _refused(junk)


def test_never_interchangeable_with_access_tokens():
    access = issue_access_token(SECRET, user_id="u1", site_id="shop", token_version=1, ttl=600,
                                extra={"siteId": "shop", "email": "a@example.com"})
    _refused(access)
    with pytest.raises(ApiError) as caught:
        decode_access_token(SECRET, tokens.issue(SECRET, "shop", "a@example.com"))
    assert caught.value.status == 401
