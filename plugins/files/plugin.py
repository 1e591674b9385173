"""Hook implementations of the files plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base.settings import parse_float, parse_int
from kernel.http.params import RecordItem
from kernel.policy.access import AccessAction
from plugins.files import fields, folders, permissions, records, routes, schemas, service, skills, upkeep
from plugins.files.assets import routes_presets as rp
from plugins.files.errors import ERROR_CODES
from plugins.files.uploads import policy
from plugins.files.uploads.catalogue import DEFAULT_ALLOWED, DEFAULT_MAX_BYTES

name = "files"
requires = ("access", "items", "schema", "settings")


@hookimpl
def register_access_actions(kernel: Any) -> list[AccessAction]:
    return [AccessAction(name, f"{name.split(':')[1].capitalize()} files, folders and presets (collection *).")
            for name in permissions.ACTIONS]


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_RATE_LIMIT_UPLOAD", 100, parse_int(0), "File uploads per minute per user (0 disables)."),
        Setting("FILE_UPLOAD_MAX_BYTES", DEFAULT_MAX_BYTES, policy.parse_max_bytes,
                "Upload size cap in bytes when a site's `upload_policy` sets none (default 25 MiB, at most 5 GiB).",
                attr="file_upload_max_bytes"),
        Setting("FILE_UPLOAD_ALLOWED_MIME_TYPES", DEFAULT_ALLOWED, policy.parse_mime_list,
                "Comma list of allowed upload MIME types when a site's `upload_policy` sets none (default: the "
                "whole catalogue of docs/files.md).", attr="file_upload_allowed_mime_types"),
        Setting("SVC_FILES_UPLOAD_URL_TTL", 900, parse_int(60), "Seconds a presigned upload URL stays valid."),
        Setting("SVC_FILES_IMPORT_TIMEOUT", 30.0, parse_float(1, 600), "Seconds to read a POST /files/import answer."),
        Setting("SVC_FILES_TRANSFORM_CONCURRENCY", 2, parse_int(1),
                "Image transforms rendered at once per process (each holds one decoded image)."),
        Setting("SVC_FILES_MAX_INPUT_PIXELS", 50_000_000, parse_int(1),
                "Largest image (width x height) a transform decodes; larger ones answer 422 IMAGE_TOO_LARGE."),
        Setting("SVC_FILES_DERIVATIVE_MEMORY_MB", 64, parse_int(0),
                "Per-process memory cache of served derivatives, in MB (0: none; storage stays the cache)."),
        Setting("SVC_FILES_ASSET_MAX_AGE", 86400, parse_int(0), "Cache-Control max-age of /assets and /media answers."),
    ]


@hookimpl
def register_setting_keys(kernel: Any) -> list[Any]:
    """``upload_policy``: the site layer of the upload policy."""
    return [policy.setting_key()]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [records.FILES_CACHE]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    """Uploads per minute, per user or API key and site (SVC_RATE_LIMIT_UPLOAD)."""
    return {"upload": RateBucket("rate_limit_upload", 60.0, "principal")}


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    """``files`` fields of items hold ids of files of the item's site."""
    bus.on_filter("items.create", fields.check_file_ids)
    bus.on_filter("items.update", fields.check_file_ids)
    # An erasure (privacy plugin) takes the erased items' files and their derivatives with it.
    bus.on_filter("items.delete", service.erase_item_files)


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.periodic("files.upkeep", upkeep.run, every_seconds=3600, owner="files")


@hookimpl
async def site_deleted(kernel: Any, site_id: str, conn: Any) -> None:
    """The site's files rows and every object under ``<site>/`` in storage."""
    await service.delete_site_files(kernel, site_id, conn)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    one = "Transform presets"
    upload = {"PUT": "upload", "POST": "upload"}
    create = "media:create"
    asset = routes.AssetResource()
    return [
        # Every upload surface names its caller before its body: bearer and media:create are
        # checked by the kernel's middleware before the responder reads a byte (the public role
        # never uploads, whatever its rules say). PUT /files/upload/{key} stays public for the
        # signed URL, which carries its own credential; unsigned, the guard admits the caller first.
        Route("/files", routes.FilesResource(), auth={"GET": "public", "POST": "bearer"}, permission={"POST": create},
              rate_limit={"POST": "upload"},
              openapi=ops(get=("List files (filter, sort, limit, offset, meta)", None, [schemas.FILE], 200),
                          post=("Register a presigned upload (the upload guard runs on it)", schemas.REGISTER_BODY,
                                schemas.FILE, 201))),
        Route("/files/upload-url", routes.UploadUrlResource(), permission=create, openapi=ops(
            post=("A presigned PUT URL for one upload", schemas.UPLOAD_URL_BODY, schemas.UPLOAD_URL, 201))),
        Route("/files/import", routes.ImportResource(), permission=create, rate_limit="upload", openapi=ops(
            post=("Import a file from a public URL", schemas.IMPORT_BODY, schemas.FILE, 201))),
        Route("/files/upload/{key}", routes.UploadResource(), site="optional", auth="public", rate_limit=upload,
              own_body_cap=True, openapi={"put": schemas.binary_upload(
                  "Upload raw bytes named {key} (or the PUT of a signed upload URL)", 201)}),
        Route("/files/{id}", routes.FileResource(), auth={"GET": "public", "*": "bearer"},
              permission={"PATCH": "media:update", "DELETE": "media:delete"}, openapi=ops(
            get=("A file's record", None, schemas.FILE, 200),
            patch=("Change title, tags, folder, folderId (move), focal point", schemas.META_PATCH_BODY, schemas.FILE,
                   200),
            delete=("Delete the file, its bytes and derivatives", None, None, 204))),
        Route("/assets/{id}", asset, auth="public",
              openapi={"get": schemas.binary_answer("The file's bytes, or a transform of an image")}),
        # The site in the path, for <img>, <video> and CSS, which send no X-Svc-Site. Falcon
        # wants one field name per level, so the site is {id} here and the file {file_id}.
        Route("/assets/{id}/{file_id}", asset, site="path", site_param="id", suffix="site", auth="public",
              openapi_path="/assets/{site_id}/{id}", openapi={"get": schemas.binary_answer(
                  "The file's bytes, or a transform of an image, in the site the path names")}),
        Route("/media/{key}", routes.MediaResource(), auth={"GET": "public", "*": "bearer"}, rate_limit=upload,
              permission={"POST": create, "DELETE": "media:delete"}, own_body_cap=True, openapi={
                  "post": {**schemas.binary_upload("Upload raw bytes named {key} (media:create)", 201)},
                  "get": schemas.binary_answer("Download as an attachment; transform parameters: 302"),
                  **ops(delete=("Delete the media file", None, None, 204))}),
        Route("/transform-presets", rp.PresetsResource(), auth={"GET": "public", "*": "bearer"},
              permission={"POST": create}, openapi=ops(
            get=(f"{one} (media:read)", None, [schemas.PRESET], 200),
            post=("Create a preset (media:create)", schemas.PRESET_BODY, schemas.PRESET, 201))),
        Route("/transform-presets/{id}", rp.PresetResource(),
              permission={"PATCH": "media:update", "DELETE": "media:delete"}, openapi=ops(
            patch=("Update a preset (media:update)", schemas.PRESET_PATCH, schemas.PRESET, 200),
            delete=("Delete a preset (media:delete)", None, None, 204))),
        Route("/folders", rp.FoldersResource(), auth={"GET": "public", "*": "bearer"}, permission={"POST": create},
              openapi=ops(get=("Folders (media:read); ?parent=<id> or null", None, [schemas.FOLDER], 200),
                          post=("Create a folder (media:create)", schemas.FOLDER_BODY, schemas.FOLDER, 201))),
        Route("/folders/{id}", RecordItem(folders.get, folders.update, folders.delete),
              auth={"GET": "public", "*": "bearer"},
              permission={"PATCH": "media:update", "DELETE": "media:delete"}, openapi=ops(
            get=("A folder (media:read)", None, schemas.FOLDER, 200),
            patch=("Rename or move a folder (media:update)", schemas.FOLDER_PATCH, schemas.FOLDER, 200),
            delete=("Delete an empty folder (media:delete)", None, None, 204))),
        Route("/uploads/config", routes.UploadConfigResource(), auth={"GET": "bearer", "PUT": "admin"}, openapi=ops(
            get=("The effective upload policy", None, schemas.POLICY, 200),
            put=("Set the site's allowlist and size cap", schemas.POLICY_BODY, schemas.POLICY, 200))),
    ]


@hookimpl(optionalhook=True)  # the ai plugin's hook; files does not require ai
def register_ai_skills(kernel: Any) -> list[dict[str, Any]]:
    return skills.ai_skills()
