"""``svc-ext deploy`` against a real ``svc serve``: one command installs, grants and enables an
extension folder in a site; the same command after a change upgrades it in place (same id, the
new code answering); a module that does not compile stops it before anything is sent, naming
the file and line; a refusal of the server is reported with its code."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import httpx
import pytest

from extensions_sdk.cli import main
from extensions_sdk.signing import generate_keypair
from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, serve_process, stop_process

TEMPLATE = Path(__file__).resolve().parents[2] / "extensions_sdk" / "template"
PRIVATE, PUBLIC = generate_keypair()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, base = serve_process(tmp_path_factory.mktemp("deploy") / "data",
                               env={"MARKETPLACE_PUBLIC_KEYS": f"example:{PUBLIC}"})
    try:
        yield base
    finally:
        assert stop_process(proc, signal.SIGINT) == 0


def test_deploy_installs_then_upgrades_in_place(server, tmp_path, capsys):
    token = httpx.post(f"{server}/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}
                       ).json()["data"]["token"]
    admin = {"Authorization": f"Bearer {token}"}
    resp = httpx.post(f"{server}/sites", headers=admin, json={"id": "deployed", "name": "Deployed"})
    assert resp.status_code == 201, resp.text
    source = tmp_path / "hello-ext"
    shutil.copytree(TEMPLATE, source, ignore=shutil.ignore_patterns("__pycache__"))
    key = tmp_path / "example.key"
    key.write_text(PRIVATE + "\n")
    args = ["deploy", str(source), "--url", server.removesuffix("/api/v1"), "--token", token, "--site", "deployed",
            "--key", str(key)]
    site = {**admin, "X-Svc-Site": "deployed"}

    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("installed hello-ext 0.1.0 (") and "enabled in site deployed with routes" in out
    resp = httpx.get(f"{server}/ext/hello-ext", headers=site)
    assert (resp.status_code, resp.json()) == (200, {"data": {"message": "hello from an extension"}})
    first = httpx.get(f"{server}/extensions", headers=admin).json()["data"]

    # A change, deployed again: the same extension, upgraded in place.
    code = source / "hello_ext" / "__init__.py"
    code.write_text(code.read_text().replace("hello from an extension", "hello again"))
    manifest = source / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"0.1.0"', '"0.2.0"'))
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("upgraded hello-ext 0.2.0 (")
    resp = httpx.get(f"{server}/ext/hello-ext", headers=site)
    assert (resp.status_code, resp.json()) == (200, {"data": {"message": "hello again"}})
    listed = httpx.get(f"{server}/extensions", headers=admin).json()["data"]
    assert [(e["id"], e["version"]) for e in listed] == [(first[0]["id"], "0.2.0")]

    # A syntax error: nothing is uploaded, the file and line are named.
    code.write_text(code.read_text() + "\ndef broken(:\n")
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "svc-ext: hello_ext/__init__.py:" in err and "invalid syntax" in err
    assert httpx.get(f"{server}/extensions", headers=admin).json()["data"][0]["version"] == "0.2.0"

    # The server's refusal, with its code: a site that does not exist.
    code.write_text(code.read_text().replace("\ndef broken(:\n", ""))
    assert main([*args[:-3], "nope", *args[-2:]]) == 1
    assert "svc-ext: grant: HTTP 404 SITE_NOT_FOUND" in capsys.readouterr().err
