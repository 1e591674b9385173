"""releases: content releases, published together, now or on a schedule.

Owns ``svc_releases`` and ``svc_release_items`` (``tables.py``). Routes (site required,
bearer; any member of the site): ``/releases`` (list with ``status``, ``page``, ``limit``;
create), ``/releases/{id}`` (detail with items, PATCH with ``addItems``/``removeItems``/
``publishAt``, DELETE), ``/releases/{id}/publish`` and ``/releases/{id}/rollback``. ``bodies.py`` checks bodies,
``service.py`` the CRUD, ``publisher.py`` publishes (``ReleasePublisher``: all_or_nothing
with a pre-flight and one transaction, best_effort item by item) through the items API with
cause ``release:<id>``, ``scheduler.py`` runs the kernel job ``releases.publish`` when due,
``windows.py`` the maintenance windows in the site's time zone (setting ``releases.timezone``),
``rollback.py`` returns a published release's items to their revisions before it (audited
``release_rolled_back``; cause ``release-rollback:<id>``).

Hooks: register_routes, register_error_codes (EMPTY_RELEASE,
ALREADY_PUBLISHED, RELEASE_IMMUTABLE, ITEM_NOT_FOUND, RELEASE_NOT_PUBLISHED, ROLLBACK_BLOCKED), register_jobs, register_setting_keys, register_ai_skills (``skills``:
``publish_release``, optional).
Events: none of its own; each published item writes ``items.update`` (bus and event log) with
``causedBy: release:<id>``. A failed scheduled publish leaves a ``release.failed`` notification.
"""
