"""The write guard without a conditional pair: no query, and a denying decision never passes."""

from __future__ import annotations

import pytest

from kernel.base.errors import ApiError
from kernel.policy.access import Decision
from plugins.items.core.grants import WriteGuard, Written, match_rows


class NoQueries:
    """A database that fails the test if the guard reads anything."""

    async def all(self, *args: object) -> list[object]:
        raise AssertionError("no query expected without a conditional pair")


async def test_unconditional_pairs_match_every_row_without_a_query():
    found = await match_rows(NoQueries(), None, Decision(True), ["a", "b"], dialect="sqlite",
                             snapshot=None, always=True)
    assert found == {"a": (True,), "b": (True,)}
    await WriteGuard(Decision(True), None, "sqlite").confirm(NoQueries(), None, [Written("a", frozenset({"t"}), None)])


async def test_a_denying_decision_matches_no_row_and_the_guard_refuses():
    denied = Decision(False, frozenset())
    found = await match_rows(NoQueries(), None, denied, ["a"], dialect="sqlite", snapshot=None, always=True)
    assert found == {"a": (False,)}
    with pytest.raises(ApiError) as err:
        await WriteGuard(denied, None, "sqlite").confirm(NoQueries(), None, [Written("a", frozenset(), None)])
    assert err.value.status == 403 and err.value.details[0].extensions["reason"] == "row_policy"
