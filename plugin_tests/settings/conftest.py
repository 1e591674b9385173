"""The settings plugin's tests run with an encryption key (secret settings are sealed with it)
and, for the declared keys, a small plugin that owns ``demo_limit``, ``demo.`` and ``demo_token``."""

from __future__ import annotations

import base64

import pytest
import pytest_asyncio

from kernel import hookimpl
from kernel.testing import shared as testing_shared
from plugins.settings.api import SettingKey

KEY = base64.b64encode(b"s" * 32).decode()
# The tests' LibreTranslate server listens on 127.0.0.1, which a site's provider may reach only
# inside the operator's allowed networks.
SETTINGS_ENV = {"SVC_ENCRYPTION_KEY": KEY, "SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32"}


def _limit(value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("must be a positive integer")
    return value


def _menu(value):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("must be a list of strings")
    return [v.strip() for v in value]


class DemoKeys:
    """A plugin declaring keys, as files or delivery do."""

    @hookimpl
    def register_setting_keys(self, kernel):
        return [SettingKey("demo_limit", _limit, description="a positive integer"),
                SettingKey("demo.", _menu, public=True),
                SettingKey("demo_token", str, secret=True)]


@pytest_asyncio.fixture
async def svc_app(make_app):
    return await make_app(env=SETTINGS_ENV)


# A module of these tests that shares one app (kernel/testing/shared.py) gets it with the same settings.
shared_site = testing_shared.shared_site_started_with(env=SETTINGS_ENV)


@pytest.fixture
def demo_keys(svc_app, temporary_plugin):
    with temporary_plugin(svc_app.kernel, DemoKeys()):
        yield
