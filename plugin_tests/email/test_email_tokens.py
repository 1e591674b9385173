"""The unsubscribe token: HS256 only, the spec's claims (an audience and a type only when
checked), never interchangeable with an access token signed by the same JWT_SECRET (pure
functions, no app; plugin_tests/email/test_email_spec_tokens.py drives the routes)."""

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


def test_the_specs_shape_and_what_libraries_add_are_accepted():
    spec = {"siteId": "shop", "email": "Ada@Example.com"}
    assert tokens.verify(SECRET, jwt.encode(spec, SECRET, algorithm="HS256")) == ("shop", "ada@example.com")
    for claims, headers in (({**spec, "iat": 1_700_000_000}, None), ({**spec, "aud": tokens.AUDIENCE}, None),
                            (spec, {"typ": None}),  # no typ header at all
                            (spec, {"typ": "jwt"}), (spec, {"typ": tokens.HEADER_TYPE})):
        assert tokens.verify(SECRET, jwt.encode(claims, SECRET, algorithm="HS256", headers=headers)) == \
            ("shop", "ada@example.com")


def test_other_algorithms_claims_and_shapes_are_refused():
    good = {"siteId": "shop", "email": "a@example.com"}
    _refused(jwt.encode(good, SECRET, algorithm="HS512"))
    _refused(jwt.encode(good, SECRET, algorithm="HS384"))
    for headers in ({"typ": "at+jwt"}, {"typ": "access"}, {"typ": 5}):
        _refused(jwt.encode(good, SECRET, algorithm="HS256", headers=headers))
    for claims in ({**good, "siteId": 5}, {**good, "email": ["a@example.com"]}, {**good, "email": "nobody"},
                   {**good, "siteId": "../x"}, {**good, "aud": "svc"}, {**good, "aud": [tokens.AUDIENCE, "x"]},
                   {**good, "extra": 1}, {**good, "sub": "u1"}, {**good, "iss": "svc"}, {**good, "typ": "access"},
                   {k: v for k, v in good.items() if k != "email"}, {k: v for k, v in good.items() if k != "siteId"},
                   {**good, "exp": 1}, {**good, "iat": "yesterday"}, {**good, "iat": 4_000_000_000}):
        _refused(jwt.encode(claims, SECRET, algorithm="HS256"))
    for junk in (None, 5, "", "a.b.c", "x" * 5000, ["t"]):
        _refused(junk)


def test_never_interchangeable_with_access_tokens():
    access = issue_access_token(SECRET, user_id="u1", site_id="shop", token_version=1, ttl=600,
                                extra={"siteId": "shop", "email": "a@example.com"})
    _refused(access)
    with pytest.raises(ApiError) as caught:
        decode_access_token(SECRET, tokens.issue(SECRET, "shop", "a@example.com"))
    assert caught.value.status == 401
