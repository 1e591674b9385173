"""A full disk under local file storage: uploads are refused cleanly, nothing half-written
stays, what was stored still reads back, and uploads work again once space is freed.

Mounts a small tmpfs (``mount -t tmpfs -o size=2m``; root is needed) as ``SVC_STORAGE``, starts
``svc serve --workers 2`` on PostgreSQL and Redis (or SQLite), and uploads files of
``--size`` bytes until one is refused. The verdict holds when

- the refusal is 507 ``INSUFFICIENT_STORAGE`` in the error envelope (never 500);
- replacing an existing file's bytes while full is refused the same way and changes nothing;
- no file lies in the storage dir (staging included) that no file row names, and every file row
  names a blob of exactly its size and checksum;
- every file stored before reads back byte-identical (``GET /assets/:id``);
- after a file is deleted through the API, the next upload succeeds.

It also reports what an operator sees meanwhile: ``svc_storage_free_bytes{volume="files"}`` on
``/metrics`` and ``GET /utils/health`` (whose storage check writes two bytes, which still fit).

    sudo .venv/bin/python bench/faults/disk_full.py
    .venv/bin/python bench/faults/disk_full.py --database-url '' --redis-url ''   # SQLite

The tmpfs is unmounted in a ``finally``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deliverykit import (  # noqa: E402 - the script's own directory first
    DEFAULT_DATABASE,
    DEFAULT_REDIS,
    Api,
    Deployment,
    clear_redis,
    reset_postgres,
    verdict,
)

SITE = "faults-disk"


def file_rows(database_url: str | None, data_dir: Path) -> list[tuple[str, str, str, int, str]]:
    sql = "select id, key, storage_key, filesize, checksum from svc_files where site_id = %s"
    if database_url:
        import psycopg

        with psycopg.connect(database_url) as conn:
            return [tuple(r) for r in conn.execute(sql, (SITE,)).fetchall()]  # type: ignore[misc]
    import sqlite3

    conn = sqlite3.connect(data_dir / "svc.sqlite3", timeout=30)
    try:
        return [tuple(r) for r in conn.execute(sql.replace("%s", "?"), (SITE,)).fetchall()]  # type: ignore[misc]
    finally:
        conn.close()


def on_disk(root: Path) -> dict[str, int]:
    """Every regular file under ``root`` (relative path -> size)."""
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def consistency(database_url: str | None, data_dir: Path, root: Path) -> dict[str, Any]:
    """Rows against blobs: rows whose blob is missing or differs, blobs no row names."""
    rows = file_rows(database_url, data_dir)
    disk = on_disk(root)
    bad_rows = []
    for _id, key, storage_key, size, checksum in rows:
        path = root / storage_key
        if not path.is_file() or path.stat().st_size != size or \
                hashlib.sha256(path.read_bytes()).hexdigest() != checksum:
            bad_rows.append(key)
    named = {r[2] for r in rows}
    orphans = sorted(k for k in disk if k not in named and not k.startswith(".health/"))
    staging = data_dir / ".upload-staging"
    staged = sorted(p.name for p in staging.iterdir()) if staging.is_dir() else []
    return {"rows": len(rows), "rows_with_missing_or_truncated_blob": bad_rows, "orphan_files": orphans,
            "left_in_upload_staging": staged}


def storage_gauges(api: Api) -> dict[str, float]:
    """The ``svc_storage_*`` series of one scrape (the worker that answers)."""
    text = api.http.get("/metrics").text
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
            if line.startswith(("svc_storage_free_bytes{", "svc_storage_size_bytes{"))}


def upload(api: Api, name: str, data: bytes) -> tuple[int, Any, float]:
    started = time.monotonic()
    resp = api.call("put", f"/files/upload/{name}", content=data, headers={"Content-Type": "text/plain"})
    took = time.monotonic() - started
    try:
        body = resp.json()
    except ValueError:
        body = resp.text[:300]
    return resp.status_code, body, took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=19405)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE, help="'' for SQLite")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS, help="'' for none")
    parser.add_argument("--tmpfs-size", default="2m")
    parser.add_argument("--size", type=int, default=300 * 1024, help="bytes per upload")
    parser.add_argument("--max-uploads", type=int, default=40)
    args = parser.parse_args()
    if os.geteuid() != 0:
        verdict("disk_full", False, error="mounting a tmpfs needs root")
        return 2
    if args.database_url:
        reset_postgres(args.database_url)
    data_dir = Path(tempfile.mkdtemp(prefix="svc-fault-disk-"))
    root = Path(tempfile.mkdtemp(prefix="svc-fault-storage-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.tmpfs_size},mode=0755", "tmpfs", str(root)],
                   check=True, timeout=30)
    dep = Deployment(data_dir, args.database_url or None, args.redis_url or None,
                     extra={"SVC_STORAGE": f"file://{root}", "FILE_UPLOAD_MAX_BYTES": str(args.size * 4)})
    api = Api(f"http://127.0.0.1:{args.port}", SITE)
    result: dict[str, Any] = {}
    try:
        dep.serve(args.port, workers=2)
        api.login()
        api.create_site(SITE)
        stored: dict[str, tuple[str, bytes]] = {}  # name -> (file id, bytes)
        refusal: tuple[int, Any, float] | None = None
        accepted_ms = []
        for i in range(args.max_uploads):
            data = secrets.token_hex(args.size // 2).encode()
            status, body, took = upload(api, f"f{i}.txt", data)
            if status == 201:
                stored[f"f{i}.txt"] = (body["data"]["id"], data)
                accepted_ms.append(round(took * 1000, 1))
                continue
            refusal = (status, body, took)
            break
        assert refusal is not None, f"{args.max_uploads} uploads fitted in {args.tmpfs_size}"
        status, body, took = refusal
        error = body["errors"][0] if isinstance(body, dict) and body.get("errors") else {}
        refused_ok = status == 507 and error.get("code") == "INSUFFICIENT_STORAGE" and \
            error.get("extensions", {}).get("code") == "INSUFFICIENT_STORAGE"
        after_refusal = consistency(args.database_url or None, data_dir, root)
        # Replacing a stored file's bytes while full: refused alike, the old bytes stay.
        first = next(iter(stored))
        replace_status, replace_body, _ = upload(api, first, secrets.token_hex(args.size // 2).encode())
        gauges = storage_gauges(api)
        health = api.call("get", "/utils/health")
        health_body = health.json()
        readback = {}
        for name, (file_id, data) in stored.items():
            resp = api.call("get", f"/assets/{file_id}")
            readback[name] = resp.status_code == 200 and resp.content == data
        after_replace = consistency(args.database_url or None, data_dir, root)
        # Free space through the API, then upload again.
        victim = list(stored)[-1]
        freed = api.call("delete", f"/files/{stored[victim][0]}").status_code
        again = None
        for _ in range(50):  # the object goes after the commit: a moment later
            again = upload(api, "again.txt", secrets.token_hex(args.size // 4).encode())
            if again[0] == 201:
                break
            time.sleep(0.1)
        assert again is not None
        final = consistency(args.database_url or None, data_dir, root)
        clean = all(not c["rows_with_missing_or_truncated_blob"] and not c["orphan_files"]
                    and not c["left_in_upload_staging"] for c in (after_refusal, after_replace, final))
        ok = refused_ok and replace_status == 507 and clean and all(readback.values()) and \
            freed == 204 and again[0] == 201
        df = subprocess.run(["df", "-k", str(root)], capture_output=True, text=True).stdout.splitlines()[-1]
        result = verdict(
            "disk_full", ok, backend="postgresql+redis" if args.database_url else "sqlite",
            tmpfs_size=args.tmpfs_size, upload_bytes=args.size, accepted=len(stored), accepted_ms=accepted_ms,
            refused={"status": status, "code": error.get("code"), "message": error.get("message"),
                     "ms": round(took * 1000, 1)},
            replace_while_full={"status": replace_status,
                                "code": (replace_body.get("errors") or [{}])[0].get("code")
                                if isinstance(replace_body, dict) else None},
            health_while_full={"status": health.status_code,
                               "storage": (health_body.get("data") or health_body.get("errors", [{}])[0].get(
                                   "extensions", {}).get("health", {})).get("checks", {}).get("storage")},
            metrics_while_full=gauges, readback_identical=all(readback.values()), readback_checked=len(readback),
            consistency_after_refusal=after_refusal, consistency_after_replace=after_replace,
            delete_status=freed, upload_after_freeing={"status": again[0]}, consistency_final=final,
            df_at_end=df, load=os.getloadavg())
    except Exception as exc:  # noqa: BLE001 - the verdict says what went wrong
        result = verdict("disk_full", False, error=f"{type(exc).__name__}: {exc}",
                         log=dep.log_tail(f"serve-{args.port}"))
    finally:
        api.close()
        dep.stop_all()
        for _ in range(20):  # bounded: the workers may hold the mount for a moment after they stop
            if subprocess.run(["umount", str(root)], capture_output=True, timeout=30).returncode == 0:
                break
            time.sleep(0.5)
        if args.redis_url:
            clear_redis(args.redis_url, dep.namespace)
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    raise SystemExit(main())
