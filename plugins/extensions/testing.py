"""The extensions plugin's test support, a pytest plugin (entry point ``svc_extensions`` in the
``pytest11`` group, beside the kernel's ``svc``): what a test needs to put an extension into an
app. ``upload_extension`` builds an extension folder, signs it and posts it to
``/extensions/upload``; the kernel's pytest plugin (``kernel.testing``) knows no plugin's routes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from extensions_sdk.bundle import build_bundle
from kernel.base.signing import sign_bytes
from kernel.testing import API


async def upload_extension(
    test_app: Any, headers: dict[str, str], source: Path, private_key: str
) -> httpx.Response:
    """Build the extension folder ``source`` (``svc-ext build``), sign it with ``private_key`` (base64,
    ``svc-ext keygen``) and post it to ``/extensions/upload`` with ``headers`` (the instance admin's)."""
    bundle = build_bundle(source)
    return await test_app.client.post(
        f"{API}/extensions/upload",
        headers=headers,
        files={"bundle": ("bundle.zip", bundle, "application/zip")},
        data={"signature": sign_bytes(private_key, bundle)},
    )


@pytest.fixture(name="upload_extension")
def upload_extension_fixture() -> Callable[..., Awaitable[httpx.Response]]:
    """``await upload_extension(app, headers, folder, private_key)``: see ``plugins.extensions.testing``."""
    return upload_extension
