"""Files over HTTP against a real ``svc serve`` (docs/performance.md, "Files and transforms").

1. Upload throughput and memory: ``--upload-mb`` (100) MB of an MP4 streamed to
   ``PUT /files/upload/{key}`` (chunked, no Content-Length), ``--upload-rounds`` times; MB/s of
   the whole request (guard, staging, storage, record) and the server worker's peak RSS above
   its idle RSS, sampled every 5 ms.
2. Transforms: a 4000x3000 JPEG (photo-like noise, quality 90) is uploaded; the first transform
   to an 800 px webp (``--first-rounds`` distinct qualities, so each one is a first render), then
   the cached derivative served again by ``--concurrency`` connections for ``--seconds``:
   requests/s, p50, p99, and the worker's peak RSS.
3. ``--directus URL``: the same three measures against a Directus started by
   the team's ``peer-directus.sh start`` (kept outside this repository) (``/files`` multipart upload,
   ``/assets/:id?width=800&format=webp``), with its process's RSS (``--directus-pid``).

Usage::

    .venv/bin/python bench/files_bench.py
    .venv/bin/python bench/files_bench.py --directus http://127.0.0.1:18055 --directus-pid 12345
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from loadclient import Http, rss_mb, tree  # noqa: E402

from kernel.testing import free_port  # noqa: E402

API = "/api/v1"
PASSWORD = "bench-password-1"
CHUNK = 1024 * 1024


class RssSampler:
    """The largest RSS (MB) of ``pids`` seen while running, sampled every 5 ms in a thread."""

    def __init__(self, pids: list[int]) -> None:
        self.pids, self.peak, self.running = pids, 0.0, True
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while self.running:
            self.peak = max(self.peak, sum(rss_mb(p) for p in self.pids))
            time.sleep(0.005)

    def __enter__(self) -> RssSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.running = False
        self.thread.join()


def mp4_chunks(total: int) -> Any:
    """An MP4-looking body (an ``ftyp`` box, then filler) of ``total`` bytes, 1 MiB at a time."""
    head = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"
    filler = os.urandom(CHUNK)
    sent = 0
    while sent < total:
        piece = (head + filler[len(head):]) if sent == 0 else filler
        piece = piece[: total - sent]
        sent += len(piece)
        yield piece


def photo_jpeg(width: int = 4000, height: int = 3000) -> bytes:
    """A photo-like JPEG: colour structure at every scale (upscaled noise of several sizes) plus
    fine grain, so both the original and an 800 px derivative weigh what a photo's do."""
    from PIL import Image

    layers = [Image.merge("RGB", [Image.effect_noise((width // f, height // f), 60).resize(
        (width, height), Image.Resampling.BICUBIC) for _ in range(3)]) for f in (200, 40, 8)]
    image = Image.blend(Image.blend(layers[0], layers[1], 0.4), layers[2], 0.25)
    grain = Image.effect_noise((width, height), 12).convert("RGB")
    out = io.BytesIO()
    Image.blend(image, grain, 0.15).save(out, "JPEG", quality=90)
    return out.getvalue()


async def hammer(host: str, port: int, headers: dict[str, str], target: str, concurrency: int,
                 seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal errors
        conn = Http(host, port, headers)
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            status, _ = await conn.request("GET", target)
            latencies.append(time.perf_counter() - t0)
            errors += status != 200
        await conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {"rps": round(len(latencies) / elapsed, 1), "p50_ms": round(latencies[len(latencies) // 2] * 1000, 2),
            "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2), "requests": len(latencies),
            "errors": errors}


# ------------------------------------------------------------------------------------------ svc


async def bench_svc(args: argparse.Namespace, jpeg: bytes) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "SVC_DATA_DIR": data_dir, "SVC_ADMIN_EMAIL": "admin@example.com",
               "SVC_ADMIN_PASSWORD": PASSWORD, "JWT_SECRET": "bench-secret-0123456789-0123456789-0123",
               "SVC_RATE_LIMIT_UPLOAD": "0", "SVC_RATE_LIMIT_AUTH": "0", "SVC_ACCESS_TOKEN_TTL": "86400",
               "FILE_UPLOAD_MAX_BYTES": str((args.upload_mb + 10) * CHUNK), "SVC_LOG_LEVEL": "WARNING"}
        svc = str(Path(sys.executable).with_name("svc"))
        proc = subprocess.Popen([svc, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base, timeout=300) as client:
                for _ in range(600):
                    try:
                        if (await client.get(f"{API}/utils/health")).status_code < 500:
                            break
                    except httpx.HTTPError:
                        pass
                    await asyncio.sleep(0.2)
                login = await client.post(f"{API}/auth/login", json={"email": "admin@example.com",
                                                                     "password": PASSWORD},
                                          headers={"X-Svc-Site": "default"})
                headers = {"Authorization": f"Bearer {login.json()['data']['token']}", "X-Svc-Site": "default"}
                pids = [p for p in tree(proc.pid) if p != proc.pid] or [proc.pid]
                idle = sum(rss_mb(p) for p in pids)
                uploads = []
                for n in range(args.upload_rounds):
                    with RssSampler(pids) as sampler:
                        t0 = time.perf_counter()
                        resp = await client.put(f"{API}/files/upload/movie-{n}.mp4",
                                                content=_aiter(mp4_chunks(args.upload_mb * CHUNK)),
                                                headers={**headers, "Content-Type": "video/mp4"})
                        elapsed = time.perf_counter() - t0
                    assert resp.status_code == 201, resp.text
                    uploads.append({"mb_s": round(args.upload_mb / elapsed, 1),
                                    "peak_rss_above_idle_mb": round(sampler.peak - idle, 1)})
                    print("svc upload", uploads[-1], flush=True)
                resp = await client.put(f"{API}/files/upload/photo.jpg", content=jpeg,
                                        headers={**headers, "Content-Type": "image/jpeg"})
                assert resp.status_code == 201, resp.text
                file_id = resp.json()["data"]["id"]
                firsts = []
                with RssSampler(pids) as sampler:
                    for q in range(args.first_rounds):
                        t0 = time.perf_counter()
                        resp = await client.get(f"{API}/assets/{file_id}?width=800&format=webp&quality={70 + q}",
                                                headers=headers)
                        firsts.append((time.perf_counter() - t0) * 1000)
                        assert resp.status_code == 200, resp.text
                first_rss = sampler.peak
                target = f"{API}/assets/{file_id}?width=800&format=webp&quality=70"
                with RssSampler(pids) as sampler:
                    cached = await hammer("127.0.0.1", port, headers, target, args.concurrency, args.seconds)
                cached["peak_rss_mb"] = round(sampler.peak, 1)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {"upload": uploads, "idle_rss_mb": round(idle, 1), "first_transform_ms": [round(f, 1) for f in firsts],
            "first_transform_peak_rss_mb": round(first_rss, 1), "cached": cached}


async def _aiter(chunks: Any) -> Any:
    for chunk in chunks:
        yield chunk


# -------------------------------------------------------------------------------------- Directus


async def bench_directus(args: argparse.Namespace, jpeg: bytes) -> dict[str, Any]:
    base = args.directus.rstrip("/")
    pids = tree(args.directus_pid) if args.directus_pid else []
    host, port = base.split("//", 1)[1].split(":")
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:
        login = await client.post("/auth/login", json={"email": args.directus_email,
                                                       "password": args.directus_password})
        token = login.json()["data"]["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        idle = sum(rss_mb(p) for p in pids)
        uploads = []
        for n in range(args.upload_rounds):
            path = Path(tempfile.mkstemp(suffix=".mp4")[1])
            with path.open("wb") as fh:
                for chunk in mp4_chunks(args.upload_mb * CHUNK):
                    fh.write(chunk)
            with RssSampler(pids) as sampler, path.open("rb") as fh:
                t0 = time.perf_counter()
                resp = await client.post("/files", files={"file": (f"movie-{n}.mp4", fh, "video/mp4")},
                                         headers=headers)
                elapsed = time.perf_counter() - t0
            path.unlink()
            assert resp.status_code == 200, resp.text
            uploads.append({"mb_s": round(args.upload_mb / elapsed, 1),
                            "peak_rss_above_idle_mb": round(sampler.peak - idle, 1)})
            print("directus upload", uploads[-1], flush=True)
        resp = await client.post("/files", files={"file": ("photo.jpg", jpeg, "image/jpeg")}, headers=headers)
        file_id = resp.json()["data"]["id"]
        firsts = []
        with RssSampler(pids) as sampler:
            for q in range(args.first_rounds):
                t0 = time.perf_counter()
                resp = await client.get(f"/assets/{file_id}?width=800&format=webp&quality={70 + q}", headers=headers)
                firsts.append((time.perf_counter() - t0) * 1000)
                assert resp.status_code == 200, resp.text
        first_rss = sampler.peak
    target = f"/assets/{file_id}?width=800&format=webp&quality=70"
    with RssSampler(pids) as sampler:
        cached = await hammer(host, int(port), headers, target, args.concurrency, args.seconds)
    cached["peak_rss_mb"] = round(sampler.peak, 1)
    return {"upload": uploads, "idle_rss_mb": round(idle, 1), "first_transform_ms": [round(f, 1) for f in firsts],
            "first_transform_peak_rss_mb": round(first_rss, 1), "cached": cached}


def summary(name: str, res: dict[str, Any]) -> None:
    up = res["upload"]
    print(f"{name:9} upload {statistics.median(u['mb_s'] for u in up):7.1f} MB/s  "
          f"peak RSS +{max(u['peak_rss_above_idle_mb'] for u in up):6.1f} MB (idle {res['idle_rss_mb']} MB)  "
          f"first transform p50 {statistics.median(res['first_transform_ms']):7.1f} ms "
          f"(peak RSS {res['first_transform_peak_rss_mb']} MB)  cached {res['cached']['rps']:8.1f} req/s "
          f"p50 {res['cached']['p50_ms']} ms p99 {res['cached']['p99_ms']} ms "
          f"(peak RSS {res['cached']['peak_rss_mb']} MB, {res['cached']['errors']} errors)", flush=True)


async def main(args: argparse.Namespace) -> None:
    random.seed(1)
    jpeg = photo_jpeg()
    print(f"source JPEG 4000x3000: {len(jpeg) / 1e6:.1f} MB", flush=True)
    results = {"svc": await bench_svc(args, jpeg)}
    if args.directus:
        results["directus"] = await bench_directus(args, jpeg)
    print(json.dumps(results, indent=1))
    for name, res in results.items():
        summary(name, res)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upload-mb", type=int, default=100)
    parser.add_argument("--upload-rounds", type=int, default=3)
    parser.add_argument("--first-rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--directus", default="", help="base URL of a running Directus")
    parser.add_argument("--directus-pid", type=int, default=0)
    parser.add_argument("--directus-email", default="admin@example.com")
    parser.add_argument("--directus-password", default="bench-admin-pass")
    asyncio.run(main(parser.parse_args()))
