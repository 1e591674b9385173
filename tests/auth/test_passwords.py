"""The argon2id parameters: production's are pinned here; the harness hashes cheaply elsewhere."""

from __future__ import annotations

from kernel.auth import passwords


def test_production_parameters_are_pinned():
    assert passwords.PARAMETERS == {"time_cost": 2, "memory_cost": 19 * 1024, "parallelism": 1}


def test_the_harness_hashes_with_the_cheap_parameters():
    assert passwords.current_parameters() == passwords.CHEAP_PARAMETERS
    assert passwords.hash_password("pw").startswith("$argon2id$v=19$m=8,t=1,p=1$")


def test_production_hashing_makes_and_verifies_production_hashes(production_password_hashing):
    made = passwords.hash_password("correct horse")
    assert made.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert passwords.verify_password(made, "correct horse")
    assert not passwords.verify_password(made, "wrong horse")
    assert not passwords.verify_password(None, "correct horse")  # the dummy hash, same cost
    assert passwords._DUMMY_HASH.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    # A hash made with the cheap parameters verifies, and is due for a rehash under production's.
    cheap = "$argon2id$v=19$m=8,t=1,p=1$" + made.split("$", 4)[4]
    assert passwords.needs_rehash(cheap)
    assert not passwords.needs_rehash(made)
