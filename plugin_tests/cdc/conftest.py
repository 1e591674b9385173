"""The change feed's tests run with an encryption key (webhook secrets are sealed with it) and a
fast retry schedule (a failed delivery is tried again after 50 ms, five times)."""

import base64

import pytest_asyncio

KEY = base64.b64encode(b"k" * 32).decode()
CDC_ENV = {"SVC_ENCRYPTION_KEY": KEY, "SVC_CDC_RETRY_SCHEDULE": "0.05,0.05,0.05,0.05,0.05",
           "SVC_CDC_READ_TIMEOUT": "2", "SVC_EVENTS_POLL_SECONDS": "0.2"}


@pytest_asyncio.fixture
async def svc_app(make_app):
    return await make_app(env=CDC_ENV)
