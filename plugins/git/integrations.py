"""Git integrations: records, create, update, disconnect, webhook secret rotation, OAuth.

An integration names one repository on one provider. Its ``token`` (a personal access token,
an app installation token, or the one an OAuth exchange granted) and its webhook secret are
sealed with ``kernel.secrets`` bound to the site; neither is ever returned, except the webhook
secret once: in the create answer (``webhookSecret``) and in ``rotate-secret``'s ``{ secret }``.
Deleting the integration forgets the token, the secret and every cached record (cascade).
"""

from __future__ import annotations

import hashlib
import secrets as std_secrets
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.events.subscriptions import SubscriptionTable
from kernel.policy import audit
from plugins.git import bodies, providers
from plugins.git.tables import integrations, oauth_states

TOKEN_PURPOSE = "git.token"
SECRET_PURPOSE = "git.webhook_secret"
STATE_TTL = timedelta(minutes=10)
MAX_PER_SITE = 50


SHAPE = SubscriptionTable(integrations, plural="git integrations",
                          missing="No such git integration in this site", max_per_site=MAX_PER_SITE)
not_found = SHAPE.not_found
row_of = SHAPE.row


def record(row: Any) -> dict[str, Any]:
    """The answer for one integration (never its token or secret)."""
    return {
        "id": row["id"], "provider": row["provider"], "repoFullName": row["repo_full_name"],
        "displayName": row["display_name"], "authMethod": row["auth_method"],
        "installationId": row["installation_id"], "status": row["status"],
        "syncConfig": dict(row["sync_config"] or {}), "hasToken": row["token"] is not None, "hasSecret": True,
        "webhookPath": f"/api/v1/integrations/git/webhook/{row['provider']}/{row['site_id']}/{row['id']}",
        "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"]),
    }


def open_token(kernel: Any, row: Any) -> str | None:
    if row["token"] is None:
        return None
    return kernel.secrets.open(row["site_id"], row["token"], purpose=TOKEN_PURPOSE)


def open_secret(kernel: Any, row: Any) -> str:
    return kernel.secrets.open(row["site_id"], row["webhook_secret"], purpose=SECRET_PURPOSE)


async def repo_of(kernel: Any, row: Any) -> providers.Repo:
    """The provider client of an integration, with its token (409 without one). A GitHub
    integration with ``authMethod: app`` and an ``installationId`` uses an installation token
    minted with the deployment's GitHub App (``providers.app_installation_token``) when one is
    configured, else the token it was given."""
    token = None
    if row["provider"] == "github" and row["auth_method"] == "app" and row["installation_id"] \
            and providers.app_configured(kernel):
        try:
            token = await providers.app_installation_token(kernel, str(row["installation_id"]))
        except providers.ProviderError as exc:
            raise providers.upstream(exc) from None
    token = token or open_token(kernel, row)
    if token is None:
        raise ApiError.conflict("The integration has no token: set one, connect it with OAuth, or configure "
                                "the GitHub App (SVC_GIT_GITHUB_APP_ID)", code="GIT_NOT_CONNECTED")
    return providers.Repo(kernel, row["provider"], row["repo_full_name"], token)


def _new_secret() -> str:
    return std_secrets.token_urlsafe(32)


def _audit(uow: Any, ctx: Any, action: str, integration_id: str, details: dict[str, Any]) -> Any:
    return audit.record(uow.conn, action=action, site_id=uow.site_id, principal=ctx.principal,
                        target_type="git_integration", target_id=integration_id, details=details,
                        request_id=ctx.request_id)


# ------------------------------------------------------------------------------- operations


async def list_records(ctx: Any) -> list[dict[str, Any]]:
    async with ctx.reader() as db:
        rows = await SHAPE.rows(db)
    return [record(row) for row in rows]


async def get_record(ctx: Any, integration_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        return record(await row_of(db, integration_id))


async def create(ctx: Any, body: Any) -> dict[str, Any]:
    kernel, site_id = ctx.kernel, ctx.require_site()
    values = bodies.parse_create(body)
    kernel.secrets.require()
    secret = _new_secret()
    if values["token"] is not None:
        values["token"] = kernel.secrets.seal(site_id, values["token"], purpose=TOKEN_PURPOSE)
    values["webhook_secret"] = kernel.secrets.seal(site_id, secret, purpose=SECRET_PURPOSE)
    now = now_utc()
    integration_id = uuid7()
    duplicate = (f"An integration of {values['provider']} repository "
                 f"'{values['repo_full_name']}' already exists in this site")
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await SHAPE.check_room(db, {"provider": values["provider"], "repo_full_name": values["repo_full_name"]},
                               duplicate)
        try:
            await db.insert(integrations, {**values, "id": integration_id, "status": "active",
                                           "created_at": now, "updated_at": now})
        except IntegrityError as exc:
            raise ApiError.conflict(duplicate) from exc
        await _audit(uow, ctx, "git.integration.create", integration_id,
                     {"provider": values["provider"], "repo": values["repo_full_name"]})
        saved = await row_of(db, integration_id)
    return {**record(saved), "webhookSecret": secret}


async def update_record(ctx: Any, integration_id: str, body: Any) -> dict[str, Any]:
    kernel, site_id = ctx.kernel, ctx.require_site()
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await row_of(db, integration_id, lock=True)
        values = bodies.parse_patch(body, row)
        if values.get("token") is not None:
            kernel.secrets.require()
            values["token"] = kernel.secrets.seal(site_id, values["token"], purpose=TOKEN_PURPOSE)
        if values:
            await db.execute(db.update(integrations).where(integrations.c.id == integration_id)
                             .values(**values, updated_at=now_utc()))
            await _audit(uow, ctx, "git.integration.update", integration_id, {"changed": sorted(values)})
        saved = await row_of(db, integration_id)
    return record(saved)


async def delete(ctx: Any, integration_id: str) -> list[int]:
    """Disconnect: the record goes, with its sealed token and secret and every cached record.
    Returns the cached pull-request numbers (whose preview sites the caller tears down)."""
    from plugins.git.tables import pull_requests

    async with ctx.unit_of_work() as uow:
        row = await row_of(uow.db, integration_id, lock=True)
        numbers = [r["number"] for r in await uow.db.all(uow.db.select(pull_requests, pull_requests.c.number)
                                                         .where(pull_requests.c.integration_id == integration_id))]
        for table in _owned_tables():
            await uow.db.execute(uow.db.delete(table).where(table.c.integration_id == integration_id))
        await uow.db.execute(uow.db.delete(integrations).where(integrations.c.id == integration_id))
        await _audit(uow, ctx, "git.integration.delete", integration_id,
                     {"provider": row["provider"], "repo": row["repo_full_name"]})
    return numbers


def _owned_tables() -> list[Any]:
    from plugins.git.tables import ci_runs, deliveries, pull_requests

    return [oauth_states, deliveries, ci_runs, pull_requests]


async def rotate_secret(ctx: Any, integration_id: str) -> dict[str, str]:
    kernel, site_id = ctx.kernel, ctx.require_site()
    kernel.secrets.require()
    secret = _new_secret()
    async with ctx.unit_of_work() as uow:
        await row_of(uow.db, integration_id, lock=True)
        await uow.db.execute(uow.db.update(integrations).where(integrations.c.id == integration_id).values(
            webhook_secret=kernel.secrets.seal(site_id, secret, purpose=SECRET_PURPOSE), updated_at=now_utc()))
        await _audit(uow, ctx, "git.integration.rotate_secret", integration_id, {})
    return {"secret": secret}


# ------------------------------------------------------------------------------- OAuth


def _state_hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


async def authorize(ctx: Any, integration_id: str) -> dict[str, str]:
    """A fresh single-use ``state`` (stored hashed, 10 minutes) and the provider's authorize URL.
    Redirect parameters of the request are ignored: the redirect URI is always the callback."""
    kernel = ctx.kernel
    kernel.secrets.require()
    state = std_secrets.token_urlsafe(32)
    async with ctx.unit_of_work() as uow:
        row = await row_of(uow.db, integration_id)
        url = providers.authorize_url(kernel, row["provider"], state)
        now = now_utc()
        await uow.db.execute(uow.db.delete(oauth_states).where(oauth_states.c.expires_at < now))
        await uow.db.insert(oauth_states, {"state_hash": _state_hash(state), "integration_id": integration_id,
                                           "provider": row["provider"], "expires_at": now + STATE_TTL,
                                           "used_at": None})
    return {"authorizeUrl": url}


def _bad_state() -> ApiError:
    return ApiError.validation("The OAuth state is unknown, expired or already used", path=["query", "state"])


async def callback(kernel: Any, provider: str, code: Any, state: Any) -> dict[str, Any]:
    """The public callback: the state is consumed first (single use, whatever follows), then the
    code is exchanged for a token, sealed onto the state's integration."""
    if not isinstance(state, str) or not 16 <= len(state) <= 200:
        raise _bad_state()
    if not isinstance(code, str) or not code or len(code) > 500 or any(ord(c) < 33 or ord(c) > 126 for c in code):
        raise ApiError.validation("'code' is required", path=["query", "code"])
    digest = _state_hash(state)
    async with kernel.db.engine.connect() as conn:  # the state's hash is the only key a caller holds
        found = (await conn.execute(select(oauth_states.c.site_id).where(oauth_states.c.state_hash == digest))).first()
    if found is None:
        raise _bad_state()
    site_id = found[0]
    now = now_utc()
    async with kernel.unit_of_work(site_id) as uow:
        used = await uow.conn.execute(
            update(oauth_states).where(oauth_states.c.site_id == site_id, oauth_states.c.state_hash == digest,
                                       oauth_states.c.provider == provider, oauth_states.c.used_at.is_(None),
                                       oauth_states.c.expires_at > now)
            .values(used_at=now).returning(oauth_states.c.integration_id))
        taken = used.first()
    if taken is None:
        raise _bad_state()
    integration_id = taken[0]
    try:
        token = await providers.exchange_code(kernel, provider, code)
    except providers.ProviderError as exc:
        raise providers.upstream(exc) from None
    async with kernel.unit_of_work(site_id) as uow:
        row = await row_of(uow.db, integration_id, lock=True)
        await uow.db.execute(uow.db.update(integrations).where(integrations.c.id == integration_id).values(
            token=kernel.secrets.seal(site_id, token, purpose=TOKEN_PURPOSE), updated_at=now_utc()))
        await audit.record(uow.conn, action="git.integration.oauth_connected", site_id=site_id,
                           target_type="git_integration", target_id=integration_id,
                           details={"provider": row["provider"]})
    return {"integrationId": integration_id, "connected": True}
