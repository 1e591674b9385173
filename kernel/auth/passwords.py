"""Password hashing with argon2id (argon2-cffi).

Parameters: time cost 2, 19 MiB memory, parallelism 1, the OWASP-recommended argon2id
minimum; it keeps a login near 20 ms of CPU on this class of machine so the auth rate limit,
not the hash, is what bounds an attacker, while login throughput stays usable.
"""

from __future__ import annotations

import asyncio

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

# The production parameters (tests/auth/test_passwords.py pins them).
PARAMETERS = {"time_cost": 2, "memory_cost": 19 * 1024, "parallelism": 1}
# argon2id at its smallest cost: only the test harness (kernel/testing/__init__.py) switches to it.
CHEAP_PARAMETERS = {"time_cost": 1, "memory_cost": 8, "parallelism": 1}

_hasher = PasswordHasher(**PARAMETERS)
# A hash of a random password, verified when the user does not exist so a login for an unknown
# email costs the same time as a wrong password (no user enumeration by timing). Made at the
# first such login, not at import (every start of svc, its CLI included, would pay for it).
_DUMMY_HASH: str | None = None


def use_parameters(parameters: dict[str, int]) -> None:
    """Hash new passwords with ``parameters`` from now on (verification reads the parameters stored
    in each hash). The test harness switches to ``CHEAP_PARAMETERS``; production never calls this."""
    global _hasher, _DUMMY_HASH
    _hasher = PasswordHasher(**parameters)
    _DUMMY_HASH = None


def current_parameters() -> dict[str, int]:
    """The parameters new hashes are made with."""
    return {"time_cost": _hasher.time_cost, "memory_cost": _hasher.memory_cost,
            "parallelism": _hasher.parallelism}


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """True when ``password`` matches; always spends one verification's time."""
    global _DUMMY_HASH
    if password_hash is None and _DUMMY_HASH is None:
        _DUMMY_HASH = _hasher.hash("svc-dummy-password-for-timing")
    try:
        return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    return _hasher.check_needs_rehash(password_hash)


async def hash_password_async(password: str) -> str:
    """Hash off the event loop: argon2 is CPU-bound for tens of milliseconds."""
    return await asyncio.to_thread(hash_password, password)


async def verify_password_async(password_hash: str | None, password: str) -> bool:
    return await asyncio.to_thread(verify_password, password_hash, password)
