"""Extensions in the studio (docs/studio.md#extensions), headless Chromium against a server of each
test's own (an extension is installed instance-wide, and pytest-xdist may run this module's tests on
different workers or in another order: the later tests install what the first one did through the
API) and the worker's one browser: the instance admin uploads a bundle whose signature fails and one whose
manifest is bad (the API's errors shown with their codes and paths), then a signed bundle, and sees
its verification (signer, digest, capabilities); enables it in the site after the capabilities to
grant were shown and confirmed, leaving one it asks for ungranted; its UI panel loads in a
sandboxed frame, where it cannot read the studio's page, storage or cookies, cannot fetch, and the
studio answers only the calls its grants allow (a collection it was not granted, a call the studio
does not offer, a route it has no grant for are refused). A member sees the panel but not the
management; another site has no panel. The instance admin makes it available to the site with a
maximum; a site admin then changes its grants within that and disables it (-- govern43). Controls by role and label; axe-core on every screen."""

from __future__ import annotations

import hashlib
import io
import json
import re
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from extensions_sdk.bundle import build_bundle
from extensions_sdk.signing import generate_keypair, sign_bytes
from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")
PRIVATE, PUBLIC = generate_keypair()
CAPS = ["ui", "items:posts", "items:secrets"]
# The panel tries what a hostile panel would, and writes down what happened.
PANEL = """
const main = document.createElement("main");
document.body.append(main);
main.append(Object.assign(document.createElement("h1"), { textContent: "Post counter" }));
const line = (text) => main.append(Object.assign(document.createElement("p"), { textContent: text }));
const attempt = (label, fn) => { try { line(`${label}: ${fn()}`); } catch (err) { line(`${label}: blocked`); } };
document.addEventListener("securitypolicyviolation", (e) => line(`policy refused: ${e.effectiveDirective}`));
attempt("studio page", () => window.parent.document.title);
attempt("studio storage", () => String(localStorage.length));
attempt("cookies", () => document.cookie || "none");
fetch("/api/v1/extensions").then(() => line("fetch: answered"), () => line("fetch: blocked"));
let next = 0;
const waiting = new Map();
window.addEventListener("message", (e) => {
  if (e.source !== window.parent || !e.data || !waiting.has(e.data.id)) return;
  waiting.get(e.data.id)(e.data);
  waiting.delete(e.data.id);
});
const ask = (call, args) => new Promise((resolve) => {
  next += 1;
  waiting.set(next, resolve);
  window.parent.postMessage({ svc: 1, id: next, call, args }, "*");
});
const said = (a) => (a.error ? a.error.code : "answered");
const context = await ask("context", {});
line(`site: ${context.data.site}`);
const posts = await ask("items.list", { collection: "posts" });
line(`posts: ${posts.error ? posts.error.code : posts.data.map((p) => p.title).sort().join(", ")}`);
line(`secrets: ${said(await ask("items.list", { collection: "secrets" }))}`);
line(`secret item: ${said(await ask("items.read", { collection: "secrets", id: "s1" }))}`);
line(`token: ${said(await ask("token", {}))}`);
line(`route: ${said(await ask("route", { path: "stats" }))}`);
"""


def counter_folder(root: Path) -> Path:
    folder = root / "post-counter"
    (folder / "post_counter").mkdir(parents=True)
    (folder / "post_counter" / "__init__.py").write_text("")
    (folder / "ui").mkdir()
    (folder / "ui" / "counter.js").write_text(PANEL)
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "name": "post-counter",
                "version": "1.0.0",
                "publisher": "example",
                "entry": "post_counter",
                "description": "Counts posts in a panel.",
                "capabilities": CAPS,
                "ui": [
                    {"id": "counter", "type": "panel", "label": "Post counter", "source": "ui/counter.js"}
                ],
            }
        )
    )
    return folder


def bad_source_bundle() -> bytes:
    """A bundle whose panel names a script it does not hold (svc-ext build would refuse it)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr(
            "manifest.json",
            json.dumps(
                {
                    "name": "broken-ui",
                    "version": "1.0.0",
                    "publisher": "example",
                    "entry": "pkg",
                    "capabilities": ["ui"],
                    "ui": [{"id": "p", "type": "panel", "label": "P", "source": "ui/missing.js"}],
                }
            ),
        )
        archive.writestr("pkg/__init__.py", "")
    return buf.getvalue()


@pytest_asyncio.fixture(loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    env = {"MARKETPLACE_PUBLIC_KEYS": f"example:{PUBLIC}"}
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, env=env) as shared:
        admin: Calls = shared.calls
        await admin.collection("posts", {"title": "string"})
        await admin.create("posts", [{"title": "Alpha"}, {"title": "Beta"}])
        await admin.collection("secrets", {"note": "string"})
        await admin.create("secrets", [{"id": "s1", "note": "not for the panel"}])
        member = await new_member(shared.app, shared.site, "subscriber")
        site_admin = await new_member(shared.app, shared.site, "admin")  # -- govern43
        await admin.grant([{"collection": "posts", "action": "read"}], {"userId": member.id})
        shared.app.kernel.access.invalidate(shared.site)
        other = await shared.new_site("other")
        bundle = build_bundle(counter_folder(tmp_path_factory.mktemp("ext")))
        server = await LiveServer(shared.app.app).start()
        try:
            yield {
                "server": server,
                "site": shared.site,
                "other": other.headers["X-Svc-Site"],
                "admin": admin,
                "member": member,
                "site_admin": site_admin,
                "bundle": bundle,
            }
        finally:
            await server.stop()


async def installed(studio: dict[str, Any]) -> str:
    """The extension as the first test leaves it, put in place through the API: the signed bundle
    uploaded, then enabled in the site with ``ui`` and ``items:posts`` granted. Its id."""
    admin: Calls = studio["admin"]
    bundle = studio["bundle"]
    resp = await admin.client.post(
        "/api/v1/extensions/upload",
        headers=admin.headers,
        files={"bundle": ("post-counter.zip", bundle, "application/zip")},
        data={"signature": sign_bytes(PRIVATE, bundle)},
    )
    assert resp.status_code == 201, resp.text
    ext_id = resp.json()["data"]["id"]
    await admin.ok("post", f"/extensions/{ext_id}/capabilities", json={"capabilities": ["items:posts", "ui"]})
    await admin.ok("post", f"/extensions/{ext_id}/enable")
    return ext_id


def upload_files(name: str, bundle: bytes, signature: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        {"name": f"{name}.zip", "mimeType": "application/zip", "buffer": bundle},
        {"name": f"{name}.zip.sig", "mimeType": "text/plain", "buffer": signature.encode()},
    )


async def take_panel_refusals(seen: Any) -> None:
    """The panel's refused fetch is logged by the browser as a CSP report (the visit's console
    check fails on any): wait for it (a deadline, polled), check it is that one, and take it out."""
    deadline = time.monotonic() + 15
    while (
        not (refusals := [m for m in seen.console if "Content Security Policy" in m])
        and time.monotonic() < deadline
    ):
        await seen.page.wait_for_timeout(100)
    assert refusals and all("/api/v1/extensions" in m and "connect" in m for m in refusals), seen.console
    seen.console[:] = [m for m in seen.console if m not in refusals]


async def test_upload_verify_enable_and_a_sandboxed_panel(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, bundle = visit.page, studio["site"], studio["bundle"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Manage extensions").click()
    await expect(page.get_by_role("heading", name="Extensions", level=1)).to_be_visible()
    await expect(page.get_by_text("No extension is installed.")).to_be_visible()
    await visit.axe()
    form = page.get_by_role("form", name="Upload a signed bundle")
    result = page.get_by_role("region", name="Verification result")

    async def send(name: str, data: bytes, signature: str) -> None:
        zip_file, sig_file = upload_files(name, data, signature)
        await form.get_by_label("Bundle (.zip)").set_input_files(zip_file)
        await form.get_by_label("Signature (.sig)").set_input_files(sig_file)
        await form.get_by_role("button", name="Upload and verify").click()

    # A signature over other bytes: the API's refusal, its code shown.
    await send("post-counter", bundle, sign_bytes(PRIVATE, b"other bytes"))
    refused = result.get_by_role("alert")
    await expect(refused).to_contain_text("The bundle was refused (HTTP 400)")
    await expect(refused).to_contain_text("SIGNATURE_INVALID")
    # A manifest whose panel names a missing script: the error's path is shown.
    broken = bad_source_bundle()
    await send("broken-ui", broken, sign_bytes(PRIVATE, broken))
    await expect(refused).to_contain_text("VALIDATION_FAILED")
    await expect(refused).to_contain_text("at bundle › ui › 0 › source")
    await visit.axe()

    await send("post-counter", bundle, sign_bytes(PRIVATE, bundle))
    await expect(result.get_by_role("heading", name="Installed post-counter 1.0.0")).to_be_visible()
    await expect(result).to_contain_text("Signed by (publisher)example")
    await expect(result).to_contain_text("Verified")
    await expect(result).to_contain_text(hashlib.sha256(bundle).hexdigest())
    asks = result.get_by_role("list", name="Capabilities it asks for")
    await expect(asks.get_by_role("listitem")).to_have_text([re.compile(f"^{re.escape(c)} ") for c in CAPS])
    await expect(page.get_by_role("table")).to_contain_text("Not enabled")
    await visit.axe()
    await visit.shot("extensions-upload")

    # Enable in the site: the capabilities are chosen, shown again and confirmed first.
    await result.get_by_role("link", name="Open post-counter to enable it in this site").click()
    await expect(page.get_by_role("heading", name="post-counter", level=1)).to_be_visible()
    grants = page.get_by_role("form", name=f"Capabilities in {site}")  # -- govern43: beside the availability form
    await grants.get_by_label(re.compile("^items:secrets ")).uncheck()
    await page.get_by_role("button", name="Review and enable…").click()
    dialog = page.get_by_role("dialog", name=f"Enable post-counter in {site}?")
    await expect(dialog.get_by_role("list", name="It will be granted:").get_by_role("listitem")).to_have_text(
        [re.compile("^ui "), re.compile("^items:posts ")]
    )
    await expect(dialog.get_by_role("list", name="It asks for, but will not be granted:")).to_contain_text(
        "items:secrets"
    )
    await visit.axe()
    await visit.shot("extensions-enable")
    ext_id = (await studio["admin"].ok("get", "/extensions"))[0]["id"]
    assert (await studio["admin"].ok("get", f"/extensions/{ext_id}"))["site"][
        "enabled"
    ] is False  # not before the confirmation
    await dialog.get_by_role("button", name="Grant and enable").click()
    await expect(page.get_by_role("status").filter(has_text="post-counter is enabled")).to_be_visible()
    state = (await studio["admin"].ok("get", f"/extensions/{ext_id}"))["site"]
    assert state["enabled"] is True and state["grantedCapabilities"] == ["items:posts", "ui"]
    await expect(page.get_by_role("button", name="Disable in this site")).to_be_visible()
    await visit.axe()

    # The panel, from the navigator (drawn again after the change), in its sandboxed frame.
    await page.get_by_role("link", name="Back to the extensions").click()
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="Post counter").click()
    await expect(page.get_by_role("heading", name="Post counter", level=1)).to_be_visible()
    frame_el = page.get_by_title("Post counter")
    assert await frame_el.get_attribute("sandbox") == "allow-scripts"
    panel = frame_el.content_frame
    await expect(panel.get_by_role("heading", name="Post counter")).to_be_visible()
    for text in (
        f"site: {site}",
        "posts: Alpha, Beta",
        "secrets: PERMISSION_DENIED",
        "secret item: PERMISSION_DENIED",
        "token: EXTENSION_REFUSED",
        "route: PERMISSION_DENIED",
        "studio page: blocked",
        "studio storage: blocked",
        "cookies: blocked",
        "fetch: blocked",
        "policy refused: connect-src",
    ):
        await expect(panel.get_by_text(text, exact=True)).to_be_visible()
    await visit.axe()
    await visit.shot("extensions-panel")
    await take_panel_refusals(visit)

    # Another site, where it is not enabled: no panel.
    await page.goto(f"{visit.base}/studio/#/s/{studio['other']}/ext/post-counter/counter")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await expect(page.get_by_role("link", name="Post counter")).to_have_count(0)
    await visit.axe()


async def test_a_member_has_the_panel_not_the_management(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, member = visit.page, studio["site"], studio["member"]
    await installed(studio)
    await sign_in(visit, member.email, member.password, site)
    nav = page.get_by_role("navigation", name="Collections")
    await expect(nav.get_by_role("link", name="Post counter")).to_be_visible()
    await expect(nav.get_by_role("link", name="Manage extensions")).to_have_count(0)
    await page.goto(f"{visit.base}/studio/#/s/{site}/extensions")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await visit.axe()
    await nav.get_by_role("link", name="Post counter").click()
    panel = page.get_by_title("Post counter").content_frame
    # The member's own rights apply too: it may read posts, and the grants still hold.
    await expect(panel.get_by_text("posts: Alpha, Beta", exact=True)).to_be_visible()
    await expect(panel.get_by_text("secrets: PERMISSION_DENIED", exact=True)).to_be_visible()
    await expect(panel.get_by_text("fetch: blocked", exact=True)).to_be_visible()
    await take_panel_refusals(visit)
    await visit.axe()


async def test_a_site_admin_within_what_the_instance_admin_offers(studio, visit):  # noqa: F811 - the shared fixture
    """-- govern43: the instance admin offers the extension to the site with at most ui and
    items:posts; the site admin sees it (no upload, no uninstall), items:secrets shown beyond the
    maximum, narrows the grants after the confirmation and disables it."""
    from playwright.async_api import expect

    page, site, admin = visit.page, studio["site"], studio["admin"]
    ext_id = await installed(studio)
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/extensions/{ext_id}")
    offer = page.get_by_role("form", name=f"Availability in {site}")
    await expect(offer.get_by_label(f"Site admins of {site} may enable it")).not_to_be_checked()
    await offer.get_by_label(f"Site admins of {site} may enable it").check()
    await offer.get_by_label(re.compile("^ui ")).check()
    await offer.get_by_label(re.compile("^items:posts ")).check()
    await offer.get_by_role("button", name="Save the availability").click()
    await expect(page.get_by_role("status").filter(has_text=f"post-counter is available in {site}")).to_be_visible()
    state = (await admin.ok("get", f"/extensions/{ext_id}"))["site"]
    assert (state["available"], state["maxCapabilities"]) == (True, ["items:posts", "ui"])
    await visit.axe()
    await visit.shot("extensions-offer")
    await page.get_by_role("button", name="Sign out").click()

    site_admin = studio["site_admin"]
    await sign_in(visit, site_admin.email, site_admin.password, site)
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="Manage extensions").click()
    await expect(page.get_by_role("heading", name="Extensions", level=1)).to_be_visible()
    await expect(page.get_by_role("form", name="Upload a signed bundle")).to_have_count(0)
    await expect(page.get_by_role("table")).to_contain_text("Enabled")
    await visit.axe()
    await page.get_by_role("link", name="post-counter").click()
    await expect(page.get_by_role("heading", name="post-counter", level=1)).to_be_visible()
    await expect(page.get_by_role("list", name="It asks for, but the instance admin does not allow in this site:")).to_contain_text("items:secrets")
    await expect(page.get_by_label(re.compile("^items:secrets "))).to_have_count(0)
    await expect(page.get_by_role("button", name="Uninstall")).to_have_count(0)
    await expect(page.get_by_role("form", name=f"Availability in {site}")).to_have_count(0)
    await page.get_by_label(re.compile("^items:posts ")).uncheck()
    await page.get_by_role("button", name="Review and save the grants…").click()
    dialog = page.get_by_role("dialog", name=f"Change what post-counter may do in {site}?")
    await expect(dialog.get_by_role("list", name="It will be granted:").get_by_role("listitem")).to_have_text([re.compile("^ui ")])
    await visit.axe()
    await visit.shot("extensions-site-admin")
    await dialog.get_by_role("button", name="Save the grants").click()
    await expect(page.get_by_role("status").filter(has_text="The grants of post-counter")).to_be_visible()
    assert (await admin.ok("get", f"/extensions/{ext_id}"))["site"]["grantedCapabilities"] == ["ui"]
    await page.get_by_role("button", name="Disable in this site").click()
    await expect(page.get_by_role("status").filter(has_text=f"post-counter is disabled in {site}")).to_be_visible()
    assert (await admin.ok("get", f"/extensions/{ext_id}"))["site"]["enabled"] is False
    await visit.axe()
