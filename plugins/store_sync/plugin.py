"""Hook implementations of the store_sync plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.base.settings import parse_float, parse_int
from plugins.store_sync import dead_letters, routes, schemas, sync
from plugins.store_sync.bodies import CODE
from plugins.store_sync.targets import parse_base_url

name = "store_sync"
requires = ("access", "accounts", "items", "realtime")


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_STORE_SYNC_FIRESTORE_URL", "https://firestore.googleapis.com", parse_base_url,
                "Base URL of the Cloud Firestore REST API the docstore target commits to (a test or an emulator "
                "points it elsewhere)."),
        Setting("SVC_STORE_SYNC_CONNECT_TIMEOUT", 5.0, parse_float(0.1, 60), "Seconds to connect to a target."),
        Setting("SVC_STORE_SYNC_READ_TIMEOUT", 15.0, parse_float(0.1, 50),
                "Seconds to wait for a target's answer (below SVC_EVENTS_LEASE_SECONDS)."),
        Setting("SVC_STORE_SYNC_BATCH", 100, parse_int(1), "Most events synced in one batch (one commit)."),
        Setting("SVC_STORE_SYNC_BACKFILL_MAX", 1000, parse_int(1), "Most items one backfill call pushes."),
        Setting("SVC_STORE_SYNC_MAX_ATTEMPTS", 12, parse_int(0),
                "Attempts of one batch before it is set aside on the pipeline's dead-letter list (0: retry forever)."),
        Setting("SVC_STORE_SYNC_DEAD_LETTER_DAYS", 30, parse_int(1, 36_500),
                "Days a dead letter is kept after its last attempt (the default horizon of the retention target "
                "storeSyncDeadLetters; a site's retention setting overrides it; without the privacy plugin the "
                "hourly job store_sync.dead_letters applies it)."),
    ]


@hookimpl
def register_event_consumers(kernel: Any) -> list[Any]:
    return [sync.consumer_group(kernel)]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [sync.MEMBERS_CACHE]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {CODE: (400, "A store-sync body or credential shape does not match the target.")}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    one = "/store-sync/pipelines/{id}"
    return [
        Route("/store-sync/pipelines", routes.PipelinesResource(), auth="admin", openapi=ops(
            get=("List the site's store-sync pipelines", None, [schemas.PIPELINE], 200),
            post=("Create a pipeline (credentials write-only, sealed)", schemas.PIPELINE_BODY, schemas.PIPELINE,
                  201))),
        Route(one, routes.PipelineResource(), auth="admin", openapi=ops(
            get=("A pipeline", None, schemas.PIPELINE, 200),
            patch=("Change it, rotate its credentials, pause or resume it", schemas.PIPELINE_PATCH,
                   schemas.PIPELINE, 200),
            delete=("Delete it and its log", None, None, 204))),
        Route(one + "/log", routes.LogResource(), auth="admin", openapi=ops(
            get=("Recent sync attempts, newest first", None, [schemas.LOG_ENTRY], 200))),
        Route(one + "/backfill", routes.BackfillResource(), auth="admin", openapi=ops(
            post=("Push the matching items, bounded per call and resumable", schemas.BACKFILL_BODY,
                  schemas.BACKFILL, 200))),
        Route(one + "/dead-letters", routes.DeadLettersResource(), auth="admin", openapi=ops(
            get=("Batches set aside after too many failed attempts, newest first", None,
                 [schemas.DEAD_LETTER], 200))),
        Route(one + "/dead-letters/{letter_id}", routes.DeadLetterResource(), auth="admin", openapi=ops(
            get=("A dead letter", None, schemas.DEAD_LETTER, 200),
            delete=("Discard a dead letter", None, None, 204))),
        Route(one + "/dead-letters/{letter_id}/replay", routes.ReplayResource(), auth="admin", openapi=ops(
            post=("Push its items as they are now", None, schemas.DEAD_LETTER, 200))),
    ]


@hookimpl
def register_sealed_columns(kernel: Any) -> list[Any]:
    """Where this plugin keeps sealed secrets (a pipeline's target credentials): checked at start (kernel/sealed.py)."""
    from plugins.store_sync.tables import pipelines

    return [pipelines.c.credentials]


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.periodic(dead_letters.PRUNE_JOB, dead_letters.prune_job, every_seconds=3600, owner="store_sync")


@hookimpl
def register_retention_targets(kernel: Any) -> list[Any]:
    """``storeSyncDeadLetters``: dead letters past their horizon since their last attempt."""
    return [dead_letters.retention_target(kernel)]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``storeSyncLog``: log entries, and a pipeline's last error, quoting the subject (a target's
    answer may quote the document it refused)."""
    from kernel.policy.privacy import ErasureTarget, erase_rows, holding
    from plugins.store_sync.tables import pipelines, sync_log

    async def erase(uow: Any, subject: Any) -> int:
        reached = await erase_rows(uow, sync_log, [sync_log.c.error], subject)
        done = await uow.db.execute(uow.db.update(pipelines).where(
            holding([pipelines.c.last_error], subject)).values(last_error=None))
        return reached + int(done.rowcount or 0)

    return [ErasureTarget("storeSyncLog", erase, "Sync log entries and pipelines' last errors quoting the subject.")]
