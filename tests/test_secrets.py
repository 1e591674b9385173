"""Secrets at rest: round trip, site and purpose binding, tampering, rotation, the key settings
checked at boot, and 400 ENCRYPTION_KEY_REQUIRED through a plugin's route when no key is set."""

from __future__ import annotations

import asyncio
import base64
import os

import pytest

from kernel import Route, hookimpl
from kernel.base.secrets import SecretError, Secrets, derived_key_id
from kernel.base.settings import Settings, SettingsError
from kernel.hooks.plugins import available_plugins
from kernel.http.media import read_json, send_data

KEY_A = base64.b64encode(bytes(range(32))).decode()
KEY_B = base64.b64encode(bytes(range(100, 132))).decode()


def keyring(tmp_path, **env: str) -> Secrets:
    settings = Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path), **env})
    return Secrets.from_settings(settings)


def test_round_trip_binds_the_site_and_the_purpose(tmp_path):
    secrets = keyring(tmp_path, SVC_ENCRYPTION_KEY=KEY_A)
    token = secrets.seal("site-a", "hunter2 \u00e9", purpose="webhook.secret")
    assert token.startswith(f"sv1.{derived_key_id(base64.b64decode(KEY_A))}.")
    assert "hunter2" not in token and token.isascii() and " " not in token
    assert secrets.open("site-a", token, purpose="webhook.secret") == "hunter2 \u00e9"
    assert secrets.seal("site-a", "hunter2 \u00e9", purpose="webhook.secret") != token  # fresh nonce
    with pytest.raises(SecretError, match="another site or purpose"):
        secrets.open("site-b", token, purpose="webhook.secret")
    with pytest.raises(SecretError):
        secrets.open("site-a", token, purpose="git.token")
    with pytest.raises(SecretError):
        secrets.open(None, token, purpose="webhook.secret")  # an instance-level secret is another scope
    raw = bytes(range(256))
    assert secrets.open_bytes(None, secrets.seal(None, raw)) == raw


def test_a_tampered_token_does_not_open(tmp_path):
    secrets = keyring(tmp_path, SVC_ENCRYPTION_KEY=KEY_A)
    token = secrets.seal("s", "value")
    prefix, kid, data = token.split(".")
    flipped = data[:-2] + ("A" if data[-2] != "A" else "B") + data[-1]
    for bad in (f"{prefix}.{kid}.{flipped}", f"{prefix}.{kid}.{data[:20]}", f"{prefix}.{kid}.@@@",
                f"sv9.{kid}.{data}", "plain text", f"{prefix}.other.{data}"):
        with pytest.raises(SecretError):
            secrets.open("s", bad)
    assert Secrets.is_sealed(token) and not Secrets.is_sealed("plain text")


def test_rotation_old_keys_open_and_the_active_key_seals(tmp_path):
    before = keyring(tmp_path, SVC_ENCRYPTION_KEY=f"2025:{KEY_A}")
    old_token = before.seal("s", "credential")
    assert before.key_id_of(old_token) == "2025"
    after = keyring(tmp_path, SVC_ENCRYPTION_KEY=f"2026:{KEY_B}", SVC_ENCRYPTION_KEYS=f"2025:{KEY_A}")
    assert after.key_ids == ["2026", "2025"] and after.active_key_id == "2026"
    assert after.open("s", old_token) == "credential"
    assert after.needs_reseal(old_token)
    new_token = after.reseal("s", old_token)
    assert after.key_id_of(new_token) == "2026" and not after.needs_reseal(new_token)
    assert after.reseal("s", new_token) is new_token
    assert after.open("s", after.seal("s", "x")) == "x" and after.seal("s", "x").startswith("sv1.2026.")
    assert after.open("s", after.seal("s", "x", key_id="2025")) == "x"  # a provisioned key on request
    with pytest.raises(SecretError, match="key '2026', which is not loaded"):
        before.open("s", new_token)


def test_no_key_means_encryption_key_required(tmp_path):
    from kernel.base.errors import ApiError

    secrets = keyring(tmp_path)
    assert not secrets.available and secrets.key_ids == []
    for call in (secrets.require, lambda: secrets.seal("s", "x"),
                 lambda: secrets.open("s", "sv1.k.AAAA")):
        with pytest.raises(ApiError) as caught:
            call()
        assert (caught.value.status, caught.value.code) == (400, "ENCRYPTION_KEY_REQUIRED")
        assert "SVC_ENCRYPTION_KEY" in caught.value.message


@pytest.mark.parametrize("env, names", [
    ({"SVC_ENCRYPTION_KEY": "not base64!"}, "SVC_ENCRYPTION_KEY="),
    ({"SVC_ENCRYPTION_KEY": base64.b64encode(b"short").decode()}, "SVC_ENCRYPTION_KEY="),
    ({"SVC_ENCRYPTION_KEY": f"bad id:{KEY_A}"}, "SVC_ENCRYPTION_KEY="),
    ({"SVC_ENCRYPTION_KEY": KEY_A, "SVC_ENCRYPTION_KEYS": f"{KEY_B},nope"}, "SVC_ENCRYPTION_KEYS="),
    ({"SVC_ENCRYPTION_KEYS": KEY_B}, "SVC_ENCRYPTION_KEYS is set but SVC_ENCRYPTION_KEY is not"),
    ({"SVC_ENCRYPTION_KEY": f"k1:{KEY_A}", "SVC_ENCRYPTION_KEYS": f"k1:{KEY_B}"}, "key id 'k1' to two"),
])
def test_bad_key_settings_stop_the_start_naming_the_variable(tmp_path, env, names):
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path), **env})
    assert names in str(caught.value)
    assert KEY_A not in str(caught.value) and KEY_B not in str(caught.value)  # keys are never echoed


def test_the_plain_key_format_of_before_still_works(tmp_path):
    key = base64.b64encode(os.urandom(32)).decode()
    secrets = keyring(tmp_path, SVC_ENCRYPTION_KEY=key)
    assert secrets.active_key_id == derived_key_id(base64.b64decode(key))
    assert secrets.open("s", secrets.seal("s", "v")) == "v"
    assert "AESGCM" not in repr(secrets) and key not in repr(secrets)


class VaultPlugin:
    """A plugin that stores one secret: it needs the key, and says so with 400."""

    name = "vault_probe"

    @hookimpl
    def register_routes(self, kernel):
        class Vault:
            async def on_post(self, req, resp):
                kernel.secrets.require()
                body = await read_json(req)
                token = kernel.secrets.seal(req.context.svc.site_id, body["secret"], purpose="vault")
                send_data(resp, {"sealed": token.split(".")[1]})

        return [Route("/vault-probe", Vault(), auth="admin")]


async def test_a_feature_answers_400_without_the_key(make_app):
    app = await make_app(plugins=[*sorted(available_plugins()), VaultPlugin()], encryption_key="")
    token = await app.login()
    resp = await app.client.post("/api/v1/vault-probe", json={"secret": "s3cret"},
                                 headers={"Authorization": f"Bearer {token}", "X-Svc-Site": "default"})
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "ENCRYPTION_KEY_REQUIRED" and error["extensions"]["code"] == "ENCRYPTION_KEY_REQUIRED"
    assert "SVC_ENCRYPTION_KEY" in error["message"]
    assert "ENCRYPTION_KEY_REQUIRED" in app.kernel.error_codes


def test_the_svc_command_refuses_a_bad_keyring(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DATA_DIR=str(tmp_path / "data"), SVC_ENCRYPTION_KEYS=KEY_B)
    out = subprocess.run([sys.executable, "-m", "kernel.cli", "plugins", "list"], env=env, capture_output=True,
                         text=True, timeout=60, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 2
    assert "SVC_ENCRYPTION_KEYS is set but SVC_ENCRYPTION_KEY is not" in out.stderr and KEY_B not in out.stderr


async def test_the_start_finds_secrets_of_a_key_not_loaded(make_app):
    """kernel/sealed.py: a token of a loaded key (its id holding '_', LIKE's wildcard) is found
    openable; one of a key not loaded is named by its column, a warning under development and a
    SettingsError in production."""
    from sqlalchemy import insert, select

    from kernel.app import database_url
    from kernel.db.engine import db_timeouts, sync_engine
    from kernel.db.meta import now_utc
    from kernel.sealed import check_sealed_keys
    from kernel.tenancy.tables import sites
    from plugins.settings.tables import settings as table

    app = await make_app(env={"SVC_ENV": "development", "SVC_ENCRYPTION_KEY": f"k_1:{KEY_A}"})
    kernel = app.kernel
    engine = sync_engine(database_url(kernel.settings), **db_timeouts(kernel.settings))

    def check() -> None:
        with engine.connect() as conn:  # never committed: closing rolls the rows back
            site = conn.execute(select(sites.c.id).limit(1)).scalar_one()
            row = {"site_id": site, "value": None, "updated_at": now_utc()}
            conn.execute(insert(table).values(key="a", sealed=kernel.secrets.seal(site, "x"), **row))
            assert check_sealed_keys(kernel, conn) is None
            conn.execute(insert(table).values(key="b", sealed="sv1.kx1.AAAA", **row))  # 'k_1' unescaped matches it
            warning = check_sealed_keys(kernel, conn)
            assert warning is not None and warning.startswith("stored secrets in svc_settings.sealed were sealed")
            assert warning.endswith("(SVC_ENV=development: starting anyway; those features fail until then)")
            kernel.settings.values["env"] = "production"
            with pytest.raises(SettingsError, match="svc_settings.sealed"):
                check_sealed_keys(kernel, conn)

    try:
        # Off the event loop: on SQLite the insert waits for the write lock, which the app's own
        # startup work may hold in a transaction that only the loop can finish ("database is
        # locked" after the busy timeout on a loaded machine when the insert blocked the loop).
        await asyncio.to_thread(check)
    finally:
        engine.dispose()
