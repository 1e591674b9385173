"""Password hashes are upgraded at login when the hashing parameters change (issue 11, A6)."""

from __future__ import annotations

from argon2 import PasswordHasher
from sqlalchemy import select, update

from kernel.auth.passwords import needs_rehash, verify_password
from plugins.accounts.tables import users

# Parameters neither production nor any test profile uses: a hash made "before the change".
OLD_HASHER = PasswordHasher(time_cost=1, memory_cost=4 * 1024, parallelism=2)


async def _stored_hash(kernel, user_id: str) -> str:
    async with kernel.db.connect() as conn:
        return (await conn.execute(select(users.c.password_hash).where(users.c.id == user_id))).scalar_one()


async def _set_hash(kernel, user_id: str, password_hash: str) -> None:
    async with kernel.db.begin() as conn:
        await conn.execute(update(users).where(users.c.id == user_id).values(password_hash=password_hash))


async def _login(client, member, site, password):
    return await client.post("/api/v1/auth/login", json={"email": member.email, "password": password},
                             headers={"X-Svc-Site": site})


async def test_a_hash_with_old_parameters_is_rehashed_at_login(svc_app, site, make_member):
    member = await make_member(site, login=False)
    old = OLD_HASHER.hash(member.password)
    assert needs_rehash(old)
    await _set_hash(svc_app.kernel, member.id, old)

    resp = await _login(svc_app.client, member, site, member.password)
    assert resp.status_code == 200, resp.text

    stored = await _stored_hash(svc_app.kernel, member.id)
    assert stored != old and not needs_rehash(stored)
    assert verify_password(stored, member.password)
    # The next login verifies against the new hash and leaves it alone.
    assert (await _login(svc_app.client, member, site, member.password)).status_code == 200
    assert await _stored_hash(svc_app.kernel, member.id) == stored


async def test_a_wrong_password_does_not_touch_the_hash(svc_app, site, make_member):
    member = await make_member(site, login=False)
    old = OLD_HASHER.hash(member.password)
    await _set_hash(svc_app.kernel, member.id, old)
    resp = await _login(svc_app.client, member, site, "not-the-password")
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "INVALID_CREDENTIALS"
    assert await _stored_hash(svc_app.kernel, member.id) == old
