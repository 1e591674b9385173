"""The external-JWT step of the ``authenticate`` chain (after API keys, before internal JWTs).

A bearer token whose unverified ``iss`` names an enabled trusted issuer of the request's site
is this step's to decide; any other token passes to the next step untouched. Once an issuer
matches, verification fails closed and never falls through: the header's ``alg`` must be one
the issuer allows (asymmetric only), the key is the issuer's by ``kid``, and the signature,
``aud``, ``exp``, ``nbf`` and ``iss`` are checked with the issuer's clock skew as leeway. A
``siteId`` claim must name the request's site. The token's roles are mapped through
``roleMapping`` (first mapped role in the claim's order wins), else ``defaultRoleId``, else
403: an external token never gets a role, least of all admin, that was not configured.
"""

from __future__ import annotations

from typing import Any

import jwt

from kernel.auth.principal import Principal
from kernel.auth.tokens import ISSUER as INTERNAL_ISSUER
from kernel.auth.tokens import bearer_token, peek_issuer
from kernel.base.errors import ApiError
from plugins.access import api as access_api
from plugins.accounts.external import external_users, issuers, jwks
from plugins.accounts.external.issuer_config import ALLOWED_ALGORITHMS, CONTROL_CHARS, MAX_TEXT, SYSTEM_KEYS

API_KEY_PREFIX = "svk_"
MAX_TOKEN_ROLES = 100


async def authenticate(request: Any, kernel: Any, site: Any) -> Principal | None:
    """The external principal of the request's bearer token, or None when it is not ours."""
    if not site:
        return None  # issuers belong to a site; without one nothing can match
    token = bearer_token(request.get_header("Authorization"))
    if token is None or token.startswith(API_KEY_PREFIX):
        return None
    iss = peek_issuer(token)
    # A registered issuer is never longer than MAX_TEXT nor holds control characters, so such a
    # claim cannot match; refusing it here also keeps odd bytes away from the database.
    if iss is None or iss == INTERNAL_ISSUER or len(iss) > MAX_TEXT or CONTROL_CHARS.search(iss):
        return None
    async with kernel.db.connect() as conn:
        row = await issuers.find_enabled(conn, site["id"], iss)
    if row is None:
        return None
    return await verify(kernel, site["id"], row, token)


def claim(claims: dict[str, Any], name: str) -> Any:
    """A claim by name; a dotted name also reaches into nested objects (``realm_access.roles``)
    when no claim has that exact name (namespaced claims such as ``https://x.io/roles`` do)."""
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _unauthenticated(message: str) -> ApiError:
    return ApiError.unauthenticated(message)


def _decode(token: str, key: Any, alg: str, config: dict[str, Any], issuer: str) -> dict[str, Any]:
    try:
        return jwt.decode(
            token, key=key, algorithms=[alg], audience=config["audience"], issuer=issuer,
            leeway=int(config.get("clockSkewSeconds") or 0),
            options={"require": ["exp", "iss", "aud"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise ApiError(401, "TOKEN_EXPIRED", "The token has expired; get a new one from the issuer") from exc
    except jwt.ImmatureSignatureError as exc:
        raise _unauthenticated("The token is not valid yet (nbf or iat is in the future)") from exc
    except jwt.InvalidAudienceError as exc:
        raise _unauthenticated("The token's audience is not one this issuer is trusted for") from exc
    except jwt.InvalidIssuerError as exc:
        raise _unauthenticated("The token's issuer does not match") from exc
    except jwt.MissingRequiredClaimError as exc:
        raise _unauthenticated(f"The token lacks the required '{exc.claim}' claim") from exc
    except jwt.PyJWTError as exc:
        raise _unauthenticated("The token's signature or claims are not valid") from exc


def token_roles(value: Any) -> list[str]:
    """The roles claim as a list: a string is one role, a list keeps its strings in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)][:MAX_TOKEN_ROLES]
    return []


async def map_role(kernel: Any, site_id: str, config: dict[str, Any], roles: list[str]) -> Any:
    """The site role for the token's roles: the first one ``roleMapping`` maps (to a role that
    still exists), else ``defaultRoleId`` unless it has come to grant admin, else 403."""
    mapping = config.get("roleMapping") or {}
    async with kernel.db.connect() as conn:
        for name in roles:
            target = mapping.get(name)
            if not target:
                continue
            if "roleId" in target:
                role = await access_api.role_in_site(conn, site_id, target["roleId"])
            elif target.get("systemKey") in SYSTEM_KEYS:
                role = await access_api.role_by_system_key(conn, site_id, target["systemKey"])
            else:
                role = None
            if role is not None:
                return role
        default_id = config.get("defaultRoleId")
        if default_id:
            role = await access_api.role_in_site(conn, site_id, default_id)
            # Checked again here: the role may have been given admin access after registration.
            if role is not None and not role["admin_access"]:
                return role
    raise ApiError.forbidden("None of the token's roles is mapped to a role of this site",
                             reason="no_role_mapping")


async def verify(kernel: Any, site_id: str, row: Any, token: str) -> Principal:
    """Verify ``token`` against the issuer ``row``; the external principal, or 401/403."""
    config = dict(row["config"] or {})
    issuer = row["issuer"]
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise _unauthenticated("The token's header cannot be read") from exc
    alg = header.get("alg")
    # Checked before any key is touched: 'none', HS* (an RSA public key used as an HMAC secret)
    # and anything the issuer was not registered with are refused outright.
    if alg not in ALLOWED_ALGORITHMS or alg not in (config.get("algorithms") or []):
        raise _unauthenticated(f"The token's algorithm {str(alg)[:20]!r} is not allowed for this issuer")
    key = await jwks.signing_key(kernel, row["id"], {**config, "issuer": issuer}, header.get("kid"), alg)
    claims = _decode(token, key, alg, config, issuer)
    user_id, role_id, email = await map_claims(kernel, site_id, row, claims)
    return Principal(kind="external", user_id=user_id, site_id=site_id, role_id=role_id, email=email,
                     claims=claims)


async def map_claims(kernel: Any, site_id: str, row: Any, claims: dict[str, Any]) -> tuple[str | None, str, str | None]:
    """Verified claims of issuer ``row`` -> (local user id or None, role id, email), as the
    issuer's ``claimMapping``, ``roleMapping`` and ``jitProvisioning`` say; 401/403 otherwise.
    Bearer tokens and the OpenID Connect login (``oidc_login``) both come through here."""
    config = dict(row["config"] or {})
    mapping = config.get("claimMapping") or {}
    claimed_site = claim(claims, mapping.get("siteId") or "siteId")
    if claimed_site is not None and claimed_site != site_id:
        raise _unauthenticated("The token is bound to another site")
    subject = claim(claims, mapping.get("externalId") or "sub")
    if not isinstance(subject, str) or not subject or len(subject) > 300:
        raise _unauthenticated("The token has no usable subject (externalId) claim")
    role = await map_role(kernel, site_id, config, token_roles(claim(claims, mapping.get("roles") or "roles")))
    email = claim(claims, mapping.get("email") or "email")
    email = email if isinstance(email, str) and email else None
    if config.get("jitProvisioning"):
        user_id = await external_users.provision(kernel, site_id, row, subject, email, role["id"])
    else:
        user_id = await external_users.linked_user(kernel, site_id, row["id"], subject)
    return user_id, role["id"], email
