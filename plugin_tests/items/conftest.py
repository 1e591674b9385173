"""Fixtures of the items tests: members with policies of the test's choosing, grants to the public
role, the seeded blog, and a recorder of item events. Admin and anonymous calls, the second site and ``make_member``
come from svc's pytest plugin (``kernel.testing``)."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio
from items_query_seed import blog

from kernel.testing import Calls


@pytest.fixture
def member(svc_app: Any, site: str, calls: Calls, make_member: Any) -> Any:
    """``await member(rules)``: a new member of ``site`` whose own policy holds ``rules``
    (``[{collection, action, fields?, conditions?}]``); returns ``(Calls, user_id)``."""

    async def make(rules: list[dict[str, Any]]) -> tuple[Calls, str]:
        made = await make_member(site, "subscriber")
        await calls.grant(rules, {"userId": made.id})
        svc_app.kernel.access.invalidate(site)
        return Calls(svc_app.client, made.headers), made.id

    return make


@pytest.fixture
def public_grant(svc_app: Any, site: str, calls: Calls) -> Any:
    """``await public_grant(rules)``: give the site's public role these rules."""

    async def give(rules: list[dict[str, Any]]) -> None:
        roles = await calls.ok("get", "/roles")
        public = next(r for r in roles if r.get("systemKey") == "public")
        await calls.grant(rules, {"roleId": public["id"]})
        svc_app.kernel.access.invalidate(site)

    return give


@pytest.fixture
async def posts(calls: Calls) -> Calls:
    """The blog of ``items_query_seed`` (posts, people, remarks), made through the API."""
    await blog(calls)
    return calls


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_posts(shared_site: Any) -> Calls:
    """The same blog, made once per module on its shared app: for tests that only read it."""
    await blog(shared_site.calls)
    return shared_site.calls


@pytest.fixture
def recorder(record_events: Any) -> Any:
    """Only the item action events (``*items.*``), recorded for the test."""
    return record_events("*items.*")
