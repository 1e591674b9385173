"""Fixtures of the regulated plugin's tests: an app with encryption keys."""

from __future__ import annotations

from typing import Any

import pytest_asyncio
from regulated_setup import KEYS_ENV


@pytest_asyncio.fixture
async def key_app(make_app: Any) -> Any:
    return await make_app(env=dict(KEYS_ENV))
