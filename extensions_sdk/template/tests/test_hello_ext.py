"""hello-ext in a real svc app: uploaded signed, granted and enabled in one site, it answers its
route there and 404 in another site. Run ``pytest`` in this folder (svc-cms[test] installed)."""

from __future__ import annotations

import json
from pathlib import Path

from extensions_sdk import generate_keypair

FOLDER = Path(__file__).resolve().parents[1]
PUBLISHER = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))["publisher"]
PRIVATE, PUBLIC = generate_keypair()  # a test key; the server trusts it for this app only


async def test_hello_ext_answers_in_its_site(make_app, upload_extension):
    app = await make_app(env={"MARKETPLACE_PUBLIC_KEYS": f"{PUBLISHER}:{PUBLIC}"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = {**admin, "X-Svc-Site": await app.create_site(admin)}
    other = {**admin, "X-Svc-Site": await app.create_site(admin, prefix="other")}
    resp = await upload_extension(app, admin, FOLDER, PRIVATE)
    assert resp.status_code == 201, resp.text
    ext = resp.json()["data"]["id"]
    resp = await app.client.post(f"/api/v1/extensions/{ext}/capabilities", headers=site,
                                 json={"capabilities": ["routes"]})
    assert resp.status_code == 200, resp.text
    resp = await app.client.post(f"/api/v1/extensions/{ext}/enable", headers=site)
    assert resp.status_code == 200, resp.text

    resp = await app.client.get("/api/v1/ext/hello-ext", headers=site)
    assert (resp.status_code, resp.json()) == (200, {"data": {"message": "hello from an extension"}})
    resp = await app.client.get("/api/v1/ext/hello-ext", headers=other)
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (404, "NOT_FOUND")
