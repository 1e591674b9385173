"""A ``<video>`` in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) plays a
file from ``/assets/{site_id}/{id}`` in a plain HTML page and seeks in it: the server answers the
browser's ``Range`` requests with 206 (docs/files.md#range-requests). Chromium asks a media file
with ``Range: bytes=0-`` first and takes a 200 there to mean "no ranges"; a clip this small
arrives whole in that answer (here Chromium makes no second request), so the seek is served from
what the 206 brought. Every request it makes must name a range and get a 206.

``data/clip.webm`` is 4 s of 64x48 VP8 at 10 frames a second, a keyframe every 5 frames (30 KB),
made once with PyAV (``av.open(out, "w", format="webm")``, stream ``libvpx``, ``g=5``), so that
CI needs no ffmpeg."""

from __future__ import annotations

from pathlib import Path

from kernel.testing import Calls

CLIP = Path(__file__).resolve().parent / "data" / "clip.webm"
WAIT = 15_000  # ms: the bound of every wait for something the page must show


def noting_ranges(app, seen: list[dict[str, str | int | None]]):
    """The ASGI app, keeping of each answer the path, the request's ``Range``, the status and
    ``Content-Range``: what the browser asked and really got."""

    async def wrapped(scope, receive, send):
        async def noting(message):
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                asked = dict(scope.get("headers") or []).get(b"range")
                seen.append(
                    {
                        "path": scope["path"],
                        "range": asked.decode() if asked else None,
                        "status": message["status"],
                        "content-range": (headers.get(b"content-range") or b"").decode() or None,
                    }
                )
            await send(message)

        await app(scope, receive, noting)

    return wrapped


async def test_a_video_seeks_through_range_requests(chromium, make_app, live_server, http_receiver):
    from playwright.async_api import async_playwright

    app = await make_app()
    seen: list[dict[str, str | int | None]] = []
    server = await live_server(noting_ranges(app.app, seen))
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    clip = await calls.ok(
        "put",
        "/files/upload/clip.webm",
        status=201,
        content=CLIP.read_bytes(),
        headers={"Content-Type": "video/webm"},
    )
    await calls.ok(
        "post", "/roles/public/permissions", status=201, json={"collection": "*", "action": "media:read"}
    )
    src = f"{server.base_url}/api/v1/assets/{site}/{clip['id']}"
    page_url = http_receiver.serve_raw(
        "/index.html",
        (
            f'<!doctype html><html><body><video id="v" muted preload="metadata" src="{src}"></video></body></html>'
        ).encode(),
        content_type="text/html",
    )
    size = CLIP.stat().st_size
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            await page.goto(page_url)
            await page.wait_for_function("document.getElementById('v').readyState >= 1", timeout=WAIT)
            clip_length = await page.evaluate("document.getElementById('v').duration")
            assert 3.5 < clip_length < 4.5, clip_length
            # Seekable over the whole clip: the browser learned the server answers ranges.
            assert await page.evaluate(
                "(v => [v.seekable.length, v.seekable.end(0)])(document.getElementById('v'))"
            ) == [1, clip_length]
            landed = await page.evaluate("""() => new Promise((resolve, reject) => {
                const v = document.getElementById('v');
                v.addEventListener('seeked', () => resolve(v.currentTime), {once: true});
                v.addEventListener('error', () => reject(new Error('media error ' + v.error.code)), {once: true});
                v.currentTime = 3.2;
            })""")
            assert abs(landed - 3.2) < 0.01, landed
            # The frame there decodes: the element can play on from the seek.
            await page.wait_for_function("document.getElementById('v').readyState >= 2", timeout=WAIT)
        finally:
            await browser.close()
    asked = [s for s in seen if s["path"].endswith(clip["id"])]
    assert asked and all(s["range"] for s in asked), seen  # every media request names a range
    assert all(s["status"] == 206 for s in asked), seen
    for s in asked:
        first = int(s["range"].removeprefix("bytes=").split("-")[0])
        assert s["content-range"].startswith(f"bytes {first}-") and s["content-range"].endswith(f"/{size}"), s
