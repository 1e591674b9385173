"""Helpers of the extensions tests: test keys, small extensions written to a folder, uploads."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from extensions_sdk.bundle import build_bundle
from extensions_sdk.signing import generate_keypair, sign_bytes

# Test keys, made once per run: "example" is the trusted publisher of MARKETPLACE_PUBLIC_KEYS,
# "other" a second trusted publisher (for forged-publisher cases), "svc" the official one
# (stored as official by the tests that need it).
KEYS = {name: generate_keypair() for name in ("example", "other", "svc", "stranger")}
PRIVATE = {name: pair[0] for name, pair in KEYS.items()}
PUBLIC = {name: pair[1] for name, pair in KEYS.items()}
MARKETPLACE = f"example:{PUBLIC['example']},other:{PUBLIC['other']},svc:{PUBLIC['svc']}"
ENV = {"MARKETPLACE_PUBLIC_KEYS": MARKETPLACE}


def write_extension(root: Path, name: str, code: str, capabilities: list[str], *, publisher: str = "example",
                    version: str = "1.0.0", **manifest: Any) -> Path:
    """A folder holding an extension ``name`` whose package's ``__init__.py`` is ``code``."""
    folder = root / f"{name}-{version}"
    package = folder / name.replace("-", "_")
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(code))
    (folder / "manifest.json").write_text(json.dumps({
        "name": name, "version": version, "publisher": publisher, "entry": name.replace("-", "_"),
        "capabilities": capabilities, **manifest}))
    return folder


def signed(folder: Path, key: str = "example") -> tuple[bytes, str]:
    bundle = build_bundle(folder)
    return bundle, sign_bytes(PRIVATE[key], bundle)


async def upload(client: Any, headers: dict[str, str], bundle: bytes, signature: str) -> Any:
    return await client.post("/api/v1/extensions/upload", headers=headers,
                             files={"bundle": ("ext.zip", bundle, "application/zip")},
                             data={"signature": signature})


async def install(client: Any, headers: dict[str, str], folder: Path, key: str = "example") -> dict[str, Any]:
    resp = await upload(client, headers, *signed(folder, key))
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


async def enable(calls: Any, ext_id: str, capabilities: list[str]) -> dict[str, Any]:
    await calls.ok("post", f"/extensions/{ext_id}/capabilities", json={"capabilities": capabilities})
    return await calls.ok("post", f"/extensions/{ext_id}/enable")


# A helper of the hostile extensions' code (indented as their code is, for ``write_extension``).
ATTEMPT = """
    def attempt(fn):
        try:
            return {"done": fn()}
        except Exception as exc:
            return {"refused": type(exc).__name__}
"""


ROUTE_CODE = '''
    from extensions_sdk import Route, hookimpl
    from kernel.http.media import send_data


    class Ping:
        async def on_get(self, req, resp):
            send_data(resp, {"pong": True})


    @hookimpl
    def register_routes(kernel):
        return [Route("/NAME/ping", Ping(), auth="public")]
'''


def route_extension(root: Path, name: str, **kw: Any) -> Path:
    """An extension with one public route ``/api/v1/ext/<name>/ping``."""
    return write_extension(root, name, ROUTE_CODE.replace("NAME", name), ["routes"], **kw)
