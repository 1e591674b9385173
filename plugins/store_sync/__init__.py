"""store_sync: push a site's content items to an outside document store, as they change.

Tables: ``svc_store_sync_pipelines``, ``svc_store_sync_log`` and
``svc_store_sync_dead_letters`` (``tables.py``, migrations ``store_sync_0001_pipelines``,
``store_sync_0002_dead_letters``). Routes (site admin):

- ``/store-sync/pipelines``: list, create (201, credentials write-only and sealed with
  ``kernel.secrets``: 400 ``ENCRYPTION_KEY_REQUIRED`` without the key; 400 ``VALIDATION_ERROR``
  for a body or credential shape that does not match the target).
- ``/store-sync/pipelines/{id}``: detail, PATCH (rotate credentials, refilter, pause, resume),
  DELETE (cascades the log and the checkpoint).
- ``…/log``: sync attempts, newest first; ``…/backfill``: push the existing items, bounded per
  call and resumable, ``{ scanned, pushed, failed, truncated }``.
- ``…/dead-letters``: batches set aside after ``SVC_STORE_SYNC_MAX_ATTEMPTS`` failed attempts
  (``dead_letters.py``; a ``store_sync.dead_letter`` notification through the realtime plugin);
  ``…/dead-letters/{letter_id}`` GET, DELETE; ``…/replay`` pushes its items as they are now
  (``replay.py``).

Targets (``targets.py``): ``docstore`` (Cloud Firestore REST ``documents:commit``, OAuth
JWT-bearer grant signed by google-auth) and ``rtdb`` (Firebase Realtime Database REST PUT and
DELETE with ``auth=``). The sync (``sync.py``) is the kernel consumer group ``store_sync``: one
member per active pipeline, with its own checkpoint, lease, order and retries. Items are read
through the items API as the pipeline's role (docs/store-sync.md).

Modules: ``bodies`` (checks), ``pipelines`` (records and CRUD), ``sync``, ``targets``,
``dead_letters``, ``replay``, ``routes``, ``schemas``, ``tables``.

Hooks: register_settings, register_event_consumers, register_site_caches
(``store_sync_pipelines``), register_error_codes (``VALIDATION_ERROR``), register_routes,
register_sealed_columns, register_jobs (``store_sync.dead_letters``, hourly: prunes dead letters
when the privacy plugin is off), register_retention_targets (``storeSyncDeadLetters``),
register_erasure_targets (``storeSyncLog``). Audit
actions: ``store_sync.pipeline.create|update|delete|backfill``.
"""
