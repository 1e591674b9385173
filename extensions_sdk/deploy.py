"""``svc-ext deploy``: one command from an extension folder to an extension running in a site.

It builds the bundle (compiling every module), signs it with the author's key, uploads it with
``?replace=true`` (a new name is installed, an installed one is upgraded in place, keeping its
id and its sites), grants it in ``--site`` the capabilities its manifest asks for (or those
named with ``--grant``) and enables it there. Each step that the server refuses stops the
deploy with the server's error code and message.

This is the author's command-line client of the server they name (``--url``): it runs on their
machine, never inside a running app, so it holds its own HTTP client (listed in
``tests/test_outbound_layout.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from extensions_sdk.bundle import build_bundle, read_manifest
from extensions_sdk.signing import sign_bytes


class DeployError(RuntimeError):
    """A step of the deploy failed; the message names the step and the server's answer."""


@dataclass
class Deployed:
    """What ``deploy`` did: the extension record as the server answers it after enabling."""

    record: dict[str, Any]
    created: bool


def api_base(url: str) -> str:
    """The API root for ``url``: the server (``http://host:8000``) or its ``/api/v1``."""
    url = url.rstrip("/")
    return url if url.endswith("/api/v1") else f"{url}/api/v1"


def _answer(step: str, resp: httpx.Response, *expected: int) -> dict[str, Any]:
    try:
        body = resp.json()
    except json.JSONDecodeError:
        body = None
    if resp.status_code not in expected:
        errors = body.get("errors") if isinstance(body, dict) else None
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            detail = f"{errors[0].get('code')}: {errors[0].get('message')}"
        else:
            detail = resp.text[:200]
        raise DeployError(f"{step}: HTTP {resp.status_code} {detail}")
    if not isinstance(body, dict) or not isinstance(body.get("data"), dict):
        raise DeployError(f"{step}: HTTP {resp.status_code} without a data object")
    return body["data"]


def deploy(source: Path, *, url: str, token: str, site: str, private_key: str, grant: list[str] | None = None,
           timeout: float = 60.0) -> Deployed:
    """Build, compile, sign, upload (replacing the same name in place), grant and enable."""
    bundle = build_bundle(source)
    manifest = read_manifest(bundle)
    signature = sign_bytes(private_key, bundle)
    capabilities = list(manifest.get("capabilities") or ()) if grant is None else grant
    headers = {"Authorization": f"Bearer {token}"}
    base = api_base(url)
    with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as http:
        try:
            resp = http.post(f"{base}/extensions/upload", params={"replace": "true"}, headers=headers,
                             files={"bundle": (f"{manifest['name']}.zip", bundle, "application/zip")},
                             data={"signature": signature})
            uploaded = _answer("upload", resp, 200, 201)
            in_site = {**headers, "X-Svc-Site": site}
            _answer("grant", http.post(f"{base}/extensions/{uploaded['id']}/capabilities", headers=in_site,
                                       json={"capabilities": capabilities}), 200)
            record = _answer("enable", http.post(f"{base}/extensions/{uploaded['id']}/enable", headers=in_site),
                             200)
        except httpx.HTTPError as exc:
            raise DeployError(f"cannot reach {base}: {exc}") from None
    return Deployed(record=record, created=resp.status_code == 201)
