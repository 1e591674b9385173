"""The work behind ``/extensions``: install, list, enable, disable, grant, uninstall, keys."""

from __future__ import annotations

import hashlib
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from sqlalchemy import delete, insert, select, update

from extensions_sdk.bundle import MAX_BUNDLE_BYTES, ManifestError, check_capability, read_manifest
from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.base.signing import SignatureError, check_public_key
from kernel.db.meta import iso, now_utc
from kernel.http.media import body_field, reject_unknown
from kernel.http.routing import API_PREFIX
from kernel.policy.audit import record as audit
from plugins.extensions import keys as keyring
from plugins.extensions import loader
from plugins.extensions.panels import panel_url
from plugins.extensions.runtime import announce, runtime
from plugins.extensions.tables import extension_keys, extension_sites, extensions
from plugins.settings import api as settings_api

MAX_UPLOAD_BYTES = MAX_BUNDLE_BYTES + 64 * 1024  # the bundle, its signature and the form's framing


def not_found(ext_id: str) -> ApiError:
    return ApiError(404, "NOT_FOUND", f"No extension '{ext_id}'")


# ---------------------------------------------------------------------- records

def record(row: Any, site: Any = None) -> dict[str, Any]:
    """An extension as ``GET /extensions`` shows it (with its state in the request's site)."""
    manifest = row["manifest"]
    out = {
        "id": row["id"], "name": row["name"], "version": row["version"], "publisher": row["publisher"],
        "description": manifest.get("description"), "isOfficial": bool(row["is_official"]),
        "signature": {"state": row["signature_state"], "sha256": row["sha256"]},
        "status": row["status"], "statusReason": row["status_reason"],
        "requestedCapabilities": list(manifest.get("capabilities") or []),
        "installedAt": iso(row["installed_at"]),
    }
    if site is not None:
        out["site"] = {
            "enabled": bool(site["enabled"]) if site else False,
            "grantedCapabilities": list(site["granted"]) if site else [],
            "failures": site["failures"] if site else 0,
            "disabledReason": site["disabled_reason"] if site else None,
            # -- govern43: what the instance admin offers the site
            "available": bool(site["available"]) if site else False,
            "maxCapabilities": list(site["max_granted"] or []) if site else [],
        }
    return out


async def _row(conn: Any, ext_id: str) -> dict[str, Any]:
    if len(ext_id) > 64 or "\x00" in ext_id:  # names nothing; PostgreSQL refuses NUL in text
        raise not_found(ext_id[:64].replace("\x00", ""))
    row = (await conn.execute(select(extensions).where(extensions.c.id == ext_id))).mappings().first()
    if row is None:
        raise not_found(ext_id)
    return dict(row)


async def _site_row(conn: Any, site_id: str, ext_id: str) -> Any:
    return (await conn.execute(select(extension_sites).where(
        extension_sites.c.site_id == site_id, extension_sites.c.extension_id == ext_id))).mappings().first()


def _shown(ctx: Any, site: Any) -> bool:
    """-- govern43: the instance admin sees every extension; a site admin those offered to the
    site or running in it (enabled by the instance admin), nothing else."""
    return ctx.principal.is_instance_admin or bool(site and (site["available"] or site["enabled"]))


async def list_extensions(ctx: Any) -> list[dict[str, Any]]:
    async with ctx.kernel.db.connect() as conn:
        rows = (await conn.execute(select(extensions).order_by(extensions.c.name))).mappings().all()
        per_site: dict[str, Any] = {}
        if ctx.site_id:
            found = await conn.execute(select(extension_sites).where(extension_sites.c.site_id == ctx.site_id))
            per_site = {r["extension_id"]: r for r in found.mappings()}
    return [record(r, per_site.get(r["id"], {}) if ctx.site_id else None) for r in rows
            if _shown(ctx, per_site.get(r["id"]))]


async def get(ctx: Any, ext_id: str) -> dict[str, Any]:
    async with ctx.kernel.db.connect() as conn:
        row = await _row(conn, ext_id)
        site = await _site_row(conn, ctx.site_id, ext_id) if ctx.site_id else None
    if not _shown(ctx, site):
        raise not_found(ext_id)
    return record(row, (site or {}) if ctx.site_id else None)


async def _offered(ctx: Any, ext_id: str) -> dict[str, Any] | None:
    """-- govern43: what a site admin may change: the site's row of an extension the instance
    admin made available to the site (404 when it is not shown to them, 403 when it runs there
    but is not theirs to change). None for the instance admin, who is bound by nothing."""
    if ctx.principal.is_instance_admin:
        return None
    async with ctx.kernel.db.connect() as conn:
        await _row(conn, ext_id)
        site = await _site_row(conn, ctx.site_id, ext_id)
    if not _shown(ctx, site):
        raise not_found(ext_id)
    if not site["available"]:
        raise ApiError.forbidden("The instance admin has not made this extension available in the site",
                                 reason="not_available")
    return dict(site)


async def ui_manifest(ctx: Any) -> list[dict[str, Any]]:
    """The UI entries of the extensions enabled in the site with ``ui`` granted."""
    async with ctx.kernel.db.connect() as conn:
        rows = (await conn.execute(
            select(extensions.c.name, extensions.c.version, extensions.c.manifest, extension_sites.c.granted)
            .join(extension_sites, extension_sites.c.extension_id == extensions.c.id)
            .where(extension_sites.c.site_id == ctx.site_id, extension_sites.c.enabled.is_(True),
                   extensions.c.status == "installed")
            .order_by(extensions.c.name))).all()
    out = []
    for name, version, manifest, granted in rows:
        if "ui" not in (granted or ()):
            continue
        for entry in manifest.get("ui") or ():
            item = {"extension": name, "version": version, **entry}
            if entry.get("source"):  # -- ext_ui: a panel the studio frames, and what it may ask
                item["src"] = panel_url(API_PREFIX, ctx.site_id, name, entry["id"])
                item["grantedCapabilities"] = sorted(granted or ())
            out.append(item)
    return out


# ---------------------------------------------------------------------- upload

def parse_upload(raw: bytes, content_type: str | None) -> tuple[bytes, str]:
    """(bundle bytes, signature) from the multipart body."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind != "multipart/form-data":
        raise ApiError.validation("The upload is multipart/form-data with fields 'bundle' and 'signature'",
                                  path=["body"])
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + raw)
    fields: dict[str, bytes] = {}
    for part in message.iter_parts() if message.is_multipart() else ():
        name = part.get_param("name", header="content-disposition")
        if name in ("bundle", "signature"):
            if name in fields:
                raise ApiError.validation(f"'{name}' is sent twice", path=[name])
            fields[name] = part.get_payload(decode=True) or b""
    for name in ("bundle", "signature"):
        if not fields.get(name):
            raise ApiError.validation(f"'{name}' is required", path=[name])
    try:
        signature = fields["signature"].decode("ascii").strip()
    except UnicodeDecodeError:
        raise ApiError.validation("'signature' is base64 text", path=["signature"]) from None
    return fields["bundle"], signature


def check_manifest(bundle: bytes) -> dict[str, Any]:
    try:
        return read_manifest(bundle)
    except ManifestError as exc:
        if exc.unsafe:
            raise ApiError(400, "BUNDLE_UNSAFE", str(exc), path=["bundle", *exc.path]) from None
        raise ApiError.validation(f"The bundle is not valid: {exc}", path=["bundle", *exc.path]) from None


async def install(ctx: Any, bundle: bytes, signature: str, *, replace: bool = False) -> tuple[dict[str, Any], bool]:
    """Check the archive and manifest, verify the signature under the policy, store.

    Returns (record, created). With ``replace``, an installed extension of the same name is
    upgraded in place: same id, its sites keep it enabled, grants the new manifest no longer asks
    for are dropped, and every worker loads the new bytes."""
    manifest = check_manifest(bundle)
    kernel = ctx.kernel
    async with kernel.db.begin() as conn:
        keys = await keyring.load_keys(kernel, conn)
        found = keyring.verdict(keys, manifest["publisher"], bundle, signature)
        state, official = keyring.admit(manifest, found, kernel.settings.get("ext_signature_policy"))
        taken = (await conn.execute(select(extensions).where(extensions.c.name == manifest["name"]))).mappings().first()
        if taken is not None and not replace:
            raise ApiError.conflict(f"Extension '{manifest['name']}' is installed; upload with ?replace=true "
                                    "to upgrade it in place", code="EXTENSION_EXISTS", id=taken["id"])
        row = {
            "id": taken["id"] if taken else uuid7(), "name": manifest["name"], "version": manifest["version"],
            "publisher": manifest["publisher"], "manifest": manifest, "bundle": bundle, "signature": signature,
            "sha256": hashlib.sha256(bundle).hexdigest(), "signature_state": state, "is_official": official,
            "status": "installed", "status_reason": None if state == "verified" else found.reason,
            "installed_at": now_utc(), "installed_by": ctx.principal.user_id,
        }
        if taken is None:
            await conn.execute(insert(extensions).values(**row))
        else:
            await conn.execute(update(extensions).where(extensions.c.id == row["id"]).values(**row))
            await _drop_unrequested_grants(conn, row["id"], set(manifest.get("capabilities") or ()))
        await audit(conn, action="extensions.upgrade" if taken else "extensions.install", site_id=None,
                    principal=ctx.principal, target_type="extension", target_id=row["id"],
                    request_id=ctx.request_id,
                    details={"name": row["name"], "version": row["version"], "signature": state,
                             **({"previousVersion": taken["version"]} if taken else {})})
    if taken is not None:
        await _load_upgrade(kernel, row)
        loader.remove_unpacked(kernel.settings.data_path, taken)
    return record(row), taken is None


async def _load_upgrade(kernel: Any, row: dict[str, Any]) -> None:
    """Load the new bytes wherever the extension is enabled; if they cannot load, the sites
    that ran it have it disabled with the error as ``disabledReason`` (enabling it again shows
    the error), rather than running nothing silently."""
    rt = runtime(kernel)
    errors = await rt.sync()
    if row["id"] in errors:
        async with kernel.db.begin() as conn:
            await conn.execute(update(extension_sites).where(
                extension_sites.c.extension_id == row["id"], extension_sites.c.enabled.is_(True))
                .values(enabled=False, updated_at=now_utc(),
                        disabled_reason=f"load failed after the upgrade to {row['version']}: {errors[row['id']]}"))
        await rt.sync()
    await announce(kernel, row["id"])


async def _drop_unrequested_grants(conn: Any, ext_id: str, requested: set[str]) -> None:
    """An upgrade keeps each site's grants that the new manifest still asks for."""
    rows = (await conn.execute(select(extension_sites.c.site_id, extension_sites.c.granted)
                               .where(extension_sites.c.extension_id == ext_id))).all()
    for site_id, granted in rows:
        kept = sorted(set(granted or ()) & requested)
        if kept != sorted(granted or ()):
            await conn.execute(update(extension_sites).where(
                extension_sites.c.site_id == site_id, extension_sites.c.extension_id == ext_id)
                .values(granted=kept, updated_at=now_utc()))


# ---------------------------------------------------------------------- per site

async def _set_site(ctx: Any, ext_id: str, **values: Any) -> None:
    async with ctx.kernel.db.begin() as conn:
        await _row(conn, ext_id)
        current = await _site_row(conn, ctx.site_id, ext_id)
        values["updated_at"] = now_utc()
        if current is None:
            row = {"site_id": ctx.site_id, "extension_id": ext_id, "enabled": False, "granted": [],
                   "failures": 0, "disabled_reason": None, **values}
            await conn.execute(insert(extension_sites).values(**row))
        else:
            await conn.execute(update(extension_sites).where(
                extension_sites.c.site_id == ctx.site_id, extension_sites.c.extension_id == ext_id).values(**values))
        if "available" in values:  # -- govern43
            action = "extensions.availability"
            details = {"available": values["available"], "maxCapabilities": values["max_granted"]}
        else:
            action = "extensions.enable" if values.get("enabled") else (
                "extensions.disable" if "enabled" in values else "extensions.grant")
            details = {"capabilities": values["granted"]} if "granted" in values else None
        await audit(conn, action=action, site_id=ctx.site_id, principal=ctx.principal, target_type="extension",
                    target_id=ext_id, request_id=ctx.request_id, details=details)


async def _apply(ctx: Any, ext_id: str) -> dict[str, Any]:
    await runtime(ctx.kernel).sync()
    await announce(ctx.kernel, ext_id)
    return await get(ctx, ext_id)


async def enable(ctx: Any, ext_id: str) -> dict[str, Any]:
    """Verify again, load in this worker (a load error is answered, nothing enabled), enable."""
    await _offered(ctx, ext_id)  # -- govern43
    kernel = ctx.kernel
    async with kernel.db.connect() as conn:
        row = await _row(conn, ext_id)
        keys = await keyring.load_keys(kernel, conn)
    rt = runtime(kernel)
    if row["status"] != "installed":
        raise ApiError.conflict(f"Extension '{row['name']}' is blocked: {row['status_reason']}",
                                code="EXTENSION_BLOCKED")
    refusal = rt.verify(row, keys)
    if refusal is not None:
        await rt.sync()  # a load that fails verification blocks the extension everywhere
        raise ApiError(400, "SIGNATURE_INVALID", refusal)
    await _set_site(ctx, ext_id, enabled=True, failures=0, disabled_reason=None)
    errors = await rt.sync()
    if ext_id in errors:
        await _set_site(ctx, ext_id, enabled=False, disabled_reason=f"load failed: {errors[ext_id]}")
        await rt.sync()
        raise ApiError(422, "EXTENSION_LOAD_FAILED", f"Extension '{row['name']}' could not be loaded: "
                                                     f"{errors[ext_id]}")
    return await _apply(ctx, ext_id)


async def disable(ctx: Any, ext_id: str) -> dict[str, Any]:
    await _offered(ctx, ext_id)  # -- govern43
    await _set_site(ctx, ext_id, enabled=False, disabled_reason=None)
    return await _apply(ctx, ext_id)


async def grant(ctx: Any, ext_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Replace the site's grants with ``capabilities`` (each one the manifest asked for)."""
    reject_unknown(body, {"capabilities"})
    offered = await _offered(ctx, ext_id)  # -- govern43
    caps = await _requested(ctx, ext_id, body, "capabilities")
    if offered is not None:
        most = set(offered["max_granted"] or ())
        for i, cap in enumerate(caps):
            if cap not in most:
                raise ApiError(403, "PERMISSION_DENIED", f"'{cap}' is beyond what the instance admin allows "
                               "this extension in the site", path=["capabilities", str(i)],
                               extensions={"reason": "beyond_maximum", "capability": cap})
    await _set_site(ctx, ext_id, granted=sorted(set(caps)))
    return await _apply(ctx, ext_id)


async def _requested(ctx: Any, ext_id: str, body: dict[str, Any], field: str) -> list[str]:
    """``body[field]``: capabilities, each one the extension's manifest asks for."""
    caps = body_field(body, field, list)
    async with ctx.kernel.db.connect() as conn:
        row = await _row(conn, ext_id)
    requested = set(row["manifest"].get("capabilities") or ())
    for i, cap in enumerate(caps):
        try:
            check_capability(cap)
        except ValueError as exc:
            raise ApiError.validation(str(exc), path=[field, str(i)]) from None
        if cap not in requested:
            raise ApiError(400, "CAPABILITY_NOT_REQUESTED",
                           f"'{cap}' is not a capability extension '{row['name']}' asks for",
                           path=[field, str(i)])
    return caps


async def set_availability(ctx: Any, ext_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """-- govern43: the instance admin offers the extension to the site (or withdraws it) with the
    most a site admin may grant. Withdrawing disables it there; a lower maximum drops the grants
    beyond it."""
    reject_unknown(body, {"available", "maxCapabilities"})
    available = body_field(body, "available", bool)
    most = sorted(set(await _requested(ctx, ext_id, body, "maxCapabilities"))) if "maxCapabilities" in body else None
    async with ctx.kernel.db.connect() as conn:
        current = await _site_row(conn, ctx.site_id, ext_id)
    if most is None:
        most = list((current["max_granted"] if current else None) or [])
    values: dict[str, Any] = {"available": available, "max_granted": most}
    if current is not None and current["enabled"] and not available:
        values.update(enabled=False, disabled_reason="no longer available in this site")
    if current is not None and not set(current["granted"] or ()) <= set(most):
        values["granted"] = sorted(set(current["granted"] or ()) & set(most))
    await _set_site(ctx, ext_id, **values)
    return await _apply(ctx, ext_id)


async def uninstall(ctx: Any, ext_id: str) -> None:
    if not ctx.principal.is_instance_admin:  # -- govern43: the route admits site admins for GET
        raise ApiError.forbidden("Uninstalling needs the instance admin")
    async with ctx.kernel.db.begin() as conn:
        row = await _row(conn, ext_id)
        await conn.execute(delete(extension_sites).where(extension_sites.c.extension_id == ext_id))
        await conn.execute(delete(extensions).where(extensions.c.id == ext_id))
        # Its settings go with it, in every site: a reinstall starts from nothing.
        dropped = await settings_api.drop_prefix(conn, f"ext.{row['name']}.")
        await audit(conn, action="extensions.uninstall", site_id=None, principal=ctx.principal,
                    target_type="extension", target_id=ext_id, request_id=ctx.request_id,
                    details={"name": row["name"], "version": row["version"],
                             "settingsDropped": sum(len(keys) for keys in dropped.values())})
    await settings_api.announce_dropped(ctx.kernel, dropped)
    await runtime(ctx.kernel).sync()
    loader.remove_unpacked(ctx.kernel.settings.data_path, row)
    await announce(ctx.kernel, ext_id)


# ---------------------------------------------------------------------- publisher keys

def key_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "publisher": row["publisher"], "publicKey": row["public_key"],
            "status": row["status"], "source": "stored", "updatedAt": iso(row["updated_at"])}


async def list_keys(ctx: Any) -> list[dict[str, Any]]:
    """The stored keys and the environment's (a stored one overrides the same key)."""
    async with ctx.kernel.db.connect() as conn:
        rows = (await conn.execute(select(extension_keys).order_by(extension_keys.c.publisher,
                                                                   extension_keys.c.public_key))).mappings().all()
    stored = {(r["publisher"], r["public_key"]) for r in rows}
    env = [{"id": None, "publisher": p, "publicKey": k, "status": "trusted", "source": "environment",
            "updatedAt": None}
           for p, k in ctx.kernel.settings.get("marketplace_public_keys") or () if (p, k) not in stored]
    return [*env, *(key_record(r) for r in rows)]


async def put_key(ctx: Any, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Store ``{ publisher, publicKey, status }`` (insert or change the status); (record, created)."""
    reject_unknown(body, {"publisher", "publicKey", "status"})
    publisher = body_field(body, "publisher", str, max_length=63)
    key = body_field(body, "publicKey", str, max_length=64)
    status = body_field(body, "status", str)
    if not keyring.NAME.match(publisher):
        raise ApiError.validation("'publisher' is 2-63 lowercase letters, digits or '-'", path=["publisher"])
    try:
        check_public_key(key)
    except SignatureError as exc:
        raise ApiError.validation(f"'publicKey': {exc}", path=["publicKey"]) from None
    if status not in keyring.STATUSES:
        raise ApiError.validation(f"'status' is one of {', '.join(keyring.STATUSES)}", path=["status"])
    now = now_utc()
    async with ctx.kernel.db.begin() as conn:
        found = (await conn.execute(select(extension_keys).where(
            extension_keys.c.publisher == publisher, extension_keys.c.public_key == key))).mappings().first()
        if found is None:
            row = {"id": uuid7(), "publisher": publisher, "public_key": key, "status": status,
                   "created_at": now, "updated_at": now}
            await conn.execute(insert(extension_keys).values(**row))
        else:
            row = {**found, "status": status, "updated_at": now}
            await conn.execute(update(extension_keys).where(extension_keys.c.id == found["id"])
                               .values(status=status, updated_at=now))
        await audit(conn, action="extensions.key", site_id=None, principal=ctx.principal,
                    target_type="extension_key", target_id=row["id"], request_id=ctx.request_id,
                    details={"publisher": publisher, "status": status})
    # A revoked key unloads what it signed at this load, in every worker.
    await runtime(ctx.kernel).sync()
    await announce(ctx.kernel, row["id"])
    return key_record(row), found is None
