"""Docs are part of the product: every hook, setting and error code is documented."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from kernel import hookspecs
from kernel.app import build_kernel
from kernel.settings import KERNEL_SETTINGS, Settings

DOCS = Path(__file__).resolve().parent.parent / "docs"


def hook_names() -> list[str]:
    return sorted(name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
                  if hasattr(fn, "svc_spec"))


def test_there_are_hooks():
    assert "authenticate" in hook_names() and "register_routes" in hook_names()


@pytest.mark.parametrize("hook", hook_names())
def test_hook_is_documented(hook):
    text = (DOCS / "plugin_hooks.md").read_text()
    assert re.search(rf"^#+ `?{hook}\b", text, re.M), f"{hook} is missing from docs/plugin_hooks.md"
    assert inspect.getdoc(getattr(hookspecs, hook)), f"{hook} has no docstring"


def test_every_setting_is_documented(tmp_path):
    text = (DOCS / "settings.md").read_text()
    kernel = build_kernel(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)}))
    declared = [s.env for s in KERNEL_SETTINGS]
    declared += [s.env for group in kernel.pm.hook.register_settings() for s in (group or [])]
    missing = [env for env in declared if f"`{env}`" not in text]
    assert not missing, f"undocumented settings: {missing}"


def test_every_error_code_is_documented(tmp_path):
    text = (DOCS / "errors.md").read_text()
    kernel = build_kernel(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)}))
    missing = [code for code in kernel.error_codes if f"`{code}`" not in text]
    assert not missing, f"undocumented error codes: {missing}"


def test_every_plugin_has_a_room_sign():
    plugins = Path(__file__).resolve().parent.parent / "plugins"
    for package in plugins.iterdir():
        if (package / "plugin.py").exists():
            doc = (package / "__init__.py").read_text()
            assert doc.lstrip().startswith('"""'), f"{package.name}/__init__.py has no docstring"
