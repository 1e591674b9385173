"""Fixtures of the schema tests: a subscriber member's calls. Admin and anonymous calls, the
second site and the event ``recorder`` come from svc's pytest plugin (``kernel.testing``)."""

from __future__ import annotations

from typing import Any

import pytest_asyncio

from kernel.testing import Calls


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_c(shared_site: Any) -> Calls:
    """The module's shared site (``shared_site``) with an empty collection ``c``; its admin's calls."""
    await shared_site.calls.collection("c")
    return shared_site.calls


@pytest_asyncio.fixture
async def member_calls(svc_app: Any, site: str, make_member: Any) -> Calls:
    """Calls as a member of ``site`` with the built-in subscriber role (no admin access)."""
    member = await make_member(site, "subscriber")
    return Calls(svc_app.client, member.headers)
