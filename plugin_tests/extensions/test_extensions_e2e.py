"""The example extension (examples/extensions/word-count: a route, an item hook, a flow operation)
built, signed and verified with svc-ext, uploaded, granted, enabled, called, inert in another site,
disabled and uninstalled, in one test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from extension_bundles import ENV, PRIVATE, PUBLIC, upload

from extensions_sdk.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "extensions" / "word-count"
CAPS = ["routes", "items:articles", "events:articles.items.create", "events:articles.items.update", "flows", "ui"]


async def _run_flow(app, calls, flow_id):
    started = await calls.ok("post", f"/flows/{flow_id}/run", 202, json={"text": "one two three"})
    await app.kernel.jobs.run_due()
    return await calls.ok("get", f"/flows/{flow_id}/runs/{started['runId']}")


async def test_example_extension_from_build_to_uninstall(make_app, tmp_path, capsys):
    # The author's side: svc-ext build, sign, verify with the test key.
    key = tmp_path / "example.key"
    key.write_text(PRIVATE["example"] + "\n")
    bundle_path, sig_path = tmp_path / "word-count.zip", tmp_path / "word-count.zip.sig"
    assert main(["build", str(EXAMPLE), "--out", str(bundle_path)]) == 0
    assert main(["sign", str(bundle_path), "--key", str(key)]) == 0
    assert main(["verify", str(bundle_path), "--signature", str(sig_path), "--public-key", PUBLIC["example"]]) == 0
    assert "ok: word-count 1.0.0 by example" in capsys.readouterr().out

    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site_a, site_b = await app.create_site(admin), await app.create_site(admin, prefix="b")
    from kernel.testing import Calls
    calls, calls_b = Calls(app.client, {**admin, "X-Svc-Site": site_a}), Calls(app.client, {**admin, "X-Svc-Site": site_b})
    for c in (calls, calls_b):
        await c.collection("articles", {"title": "string", "body": "text", "words": "integer"})

    # Upload: verified, third-party, nothing enabled yet.
    resp = await upload(app.client, admin, bundle_path.read_bytes(), sig_path.read_text().strip())
    assert resp.status_code == 201, resp.text
    ext = resp.json()["data"]
    assert (ext["name"], ext["version"], ext["publisher"], ext["isOfficial"]) == ("word-count", "1.0.0", "example",
                                                                                 False)
    assert ext["signature"]["state"] == "verified" and ext["status"] == "installed"
    assert ext["requestedCapabilities"] == CAPS
    await calls.err("get", "/ext/word-count/articles/x", 404, "NOT_FOUND")

    # Grant and enable in site A only.
    await calls.ok("post", f"/extensions/{ext['id']}/capabilities", json={"capabilities": CAPS})
    enabled = await calls.ok("post", f"/extensions/{ext['id']}/enable")
    assert enabled["site"] == {"enabled": True, "grantedCapabilities": sorted(CAPS), "failures": 0,
                               "disabledReason": None, "available": False, "maxCapabilities": []}
    listed = await calls.ok("get", "/extensions")
    assert [(e["name"], e["site"]["enabled"]) for e in listed] == [("word-count", True)]
    assert [(e["name"], e["site"]["enabled"]) for e in await calls_b.ok("get", "/extensions")] == [
        ("word-count", False)]

    # The item hook fills `words` in A; the route reads it back as the caller.
    article = await calls.create("articles", {"title": "t", "body": "the quick brown fox"})
    assert article["words"] == 4
    updated = await calls.ok("patch", f"/items/articles/{article['id']}", json={"body": "jumps"})
    assert updated["words"] == 1
    assert await calls.ok("get", f"/ext/word-count/articles/{article['id']}") == {"id": article["id"], "words": 1}
    # The flow operation is listed and runs in A.
    keys = [op["key"] for op in await calls.ok("get", "/flows/operations")]
    assert "word-count" in keys
    graph = {"nodes": [{"id": "n", "operation": "word-count", "options": {"text": "{{ $trigger.text }}"}}],
             "edges": []}
    flow = await calls.ok("post", "/flows", 201, json={"name": "wc", "status": "active", "trigger": "manual",
                                                       "graph": graph})
    run = await _run_flow(app, calls, flow["id"])
    assert run["status"] == "succeeded" and run["steps"][0]["output"] == {"words": 3}
    ui = await calls.ok("get", "/extensions/ui/manifest")
    panel = f"/api/v1/extensions/ui/panels/{site_a}/word-count/word-count-panel"
    assert ui == [{"extension": "word-count", "version": "1.0.0", "id": "word-count-panel", "type": "panel",
                   "label": "Word count", "icon": "numbers", "source": "ui/panel.js", "src": panel,
                   "grantedCapabilities": sorted(ui[0]["grantedCapabilities"])}]
    assert "ui" in ui[0]["grantedCapabilities"]
    # The panel loads: its script, served in its own sandboxed document.
    served = await app.client.get(panel)
    assert served.status_code == 200 and "items.list" in served.text, served.text

    # Site B: the route answers 404, the hook does not run, the operation refuses, no UI entry.
    b_article = await calls_b.create("articles", {"title": "t", "body": "a b c"})
    assert b_article.get("words") is None
    await calls_b.err("get", f"/ext/word-count/articles/{b_article['id']}", 404, "NOT_FOUND")
    await calls_b.err("get", f"/ext/word-count/articles/{article['id']}", 404, "NOT_FOUND")
    flow_b = await calls_b.ok("post", "/flows", 201, json={"name": "wc", "status": "active", "trigger": "manual",
                                                           "graph": graph})
    run_b = await _run_flow(app, calls_b, flow_b["id"])
    assert run_b["status"] == "failed"
    assert await calls_b.ok("get", "/extensions/ui/manifest") == []

    # Its code ran in a runner process of its own, never imported here.
    module_prefix = "svc_ext_word_count"
    assert not any(name.startswith(module_prefix) for name in sys.modules)
    host = app.kernel.state["extensions.runtime"].loaded[ext["id"]].host
    assert host.pid is not None and host.pid != os.getpid()
    # Disable in A: every registration is undone, and the runner stops.
    disabled = await calls.ok("post", f"/extensions/{ext['id']}/disable")
    assert disabled["site"]["enabled"] is False
    await calls.err("get", f"/ext/word-count/articles/{article['id']}", 404, "NOT_FOUND")
    assert (await calls.create("articles", {"title": "t", "body": "x y"})).get("words") is None
    assert "word-count" not in [op["key"] for op in await calls.ok("get", "/flows/operations")]
    assert await calls.ok("get", "/extensions/ui/manifest") == []
    assert not app.kernel.extension_routes.owners()
    await app.kernel.state["extensions.runtime"].drain()
    assert host.pid is None and not host.workdir.exists()
    assert not [j for j in app.kernel.jobs.names() if j.startswith("ext.")]

    # Uninstall: gone from the list; its id is unknown afterwards.
    await calls.ok("delete", f"/extensions/{ext['id']}", status=204)
    assert await calls.ok("get", "/extensions") == []
    await calls.err("post", f"/extensions/{ext['id']}/enable", 404, "NOT_FOUND")

    # The template, through `svc-ext new`: the same cycle for its one public route.
    source = tmp_path / "greeter"
    assert main(["new", "greeter", "--publisher", "example", "--out", str(source)]) == 0
    assert main(["build", str(source), "--out", str(tmp_path / "greeter.zip")]) == 0
    assert main(["sign", str(tmp_path / "greeter.zip"), "--key", str(key)]) == 0
    resp = await upload(app.client, admin, (tmp_path / "greeter.zip").read_bytes(),
                        (tmp_path / "greeter.zip.sig").read_text().strip())
    greeter = resp.json()["data"]
    await calls.ok("post", f"/extensions/{greeter['id']}/capabilities", json={"capabilities": ["routes"]})
    await calls.ok("post", f"/extensions/{greeter['id']}/enable")
    resp = await app.client.get("/api/v1/ext/greeter", headers={"X-Svc-Site": site_a})  # public: no token
    assert resp.json() == {"data": {"message": "hello from an extension"}}
    await calls.ok("post", f"/extensions/{greeter['id']}/disable")
    await calls.err("get", "/ext/greeter", 404, "NOT_FOUND")
    await calls.ok("delete", f"/extensions/{greeter['id']}", status=204)
