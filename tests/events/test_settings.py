"""The event settings are checked at boot, and SVC_PLUGINS_EXTRA loads (or refuses) a module."""

from __future__ import annotations

import pytest

from kernel.app import build_kernel
from kernel.base.settings import Settings, SettingsError
from kernel.hooks.plugins import PluginError


def test_defaults_are_sane(tmp_path):
    settings = Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)})
    assert settings.events_dispatch is True
    assert settings.events_poll_seconds == 2.0 and settings.events_batch == 100
    assert settings.events_lease_seconds == 60 and settings.cdc_retention_days == 7
    assert settings.events_retry_base_seconds <= settings.events_retry_max_seconds


@pytest.mark.parametrize("env", [
    {"SVC_EVENTS_POLL_SECONDS": "0"}, {"SVC_EVENTS_POLL_SECONDS": "nan"}, {"SVC_EVENTS_POLL_SECONDS": "often"},
    {"SVC_EVENTS_BATCH": "0"}, {"SVC_EVENTS_LEASE_SECONDS": "0"}, {"SVC_CDC_RETENTION_DAYS": "0"},
    {"SVC_EVENTS_DISPATCH": "maybe"}, {"SVC_EVENTS_RETRY_BASE_SECONDS": "10", "SVC_EVENTS_RETRY_MAX_SECONDS": "5"},
])
def test_bad_values_stop_the_boot_naming_the_variable(tmp_path, env):
    with pytest.raises(SettingsError, match="SVC_"):
        Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path), **env})


def test_plugins_extra_registers_a_module(tmp_path):
    kernel = build_kernel(Settings.from_env(environ={
        "SVC_DATA_DIR": str(tmp_path), "SVC_PLUGINS_EXTRA": "tests.events.recording_consumer",
        "SVC_TEST_RECORD_FILE": str(tmp_path / "r.txt")}))
    assert "recording_consumer" in [p.name for p in kernel.plugins]
    assert "recorder" in kernel.events.consumers  # beside the consumers of installed plugins
    with pytest.raises(PluginError, match="SVC_PLUGINS_EXTRA"):
        build_kernel(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path),
                                                "SVC_PLUGINS_EXTRA": "tests.events.no_such_module"}))
