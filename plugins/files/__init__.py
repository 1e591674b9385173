"""files: files, assets and image transforms, media, transform presets, the upload policy, and
the one upload guard every byte passes (docs/files.md).

Tables (``tables.py``, migrations ``files_0001_files`` to ``files_0003_folders``): ``svc_files``,
``svc_file_tags``, ``svc_file_folders``, ``svc_file_uploads``, ``svc_transform_presets``; the
site's upload policy is the setting ``upload_policy`` (declared through settings' ``register_setting_keys``). Routes:

- ``/files`` (list with the items query language; register a presigned upload),
  ``/files/{id}`` (get, patch title/tags/folder/folderId/focal point, delete), ``/folders`` and
  ``/folders/{id}`` (nested folders, ``folders.py``), ``/files/upload-url``,
  ``/files/upload/{key}`` (raw upload, or a signed local upload URL), ``/files/import``;
- ``/assets/{id}`` (original or transform; ETag, 304, one byte range, nosniff, attachment unless
  raster), and
  ``/assets/{site_id}/{id}``, the same with the site in the path (``<img src>``);
- ``/media/{key}`` (upload, download as attachment or 302 to a transform, delete);
- ``/transform-presets`` and ``/transform-presets/{id}``; ``/uploads/config``.

Permissions: the ``media:*`` rules (collection ``*``); their conditions bound the rows
(``permissions.py``). Upload surfaces go through ``guard.py`` (the order of its checks is its
docstring). Modules: ``catalogue`` (types), ``policy``, ``staging``, ``checks`` and ``svg``
(content checks), ``records`` and ``query`` (reads, the files filter), ``service`` (writes,
events), ``uploads`` (the surfaces), ``importer`` (outbound fetch), ``transforms`` and
``assets`` (derivatives), ``presets``, ``fields`` (the schema's ``files`` type), ``upkeep``, ``routes``,
``routes_presets``, ``schemas``.

Hooks: register_settings (``FILE_UPLOAD_*``, ``SVC_FILES_*``), register_setting_keys
(``upload_policy``),
register_error_codes, register_rate_limits (bucket ``upload``), register_event_handlers
(filters ``items.create|update``: file ids of ``files`` fields exist in the site),
register_routes, register_jobs (``files.upkeep``: expired pending uploads), register_ai_skills
(``skills``: ``import_file``, optional), site_deleted,
shutdown. Events: ``files.create|update|delete`` on the event log and the bus.
Audit: policy changes are the settings plugin's ``settings.update`` records.
"""
