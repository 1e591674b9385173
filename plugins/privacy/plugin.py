"""Hook implementations of the privacy plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base.settings import parse_int
from plugins.privacy import consent, erasure, hookspecs, retention, routes
from plugins.privacy import schemas as s
from plugins.privacy.tables import consents, erasures, restrictions
from plugins.settings.api import SettingKey

name = "privacy"
requires = ("settings", "accounts", "access", "items")


@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(hookspecs)


@hookimpl
def register_settings() -> list[Setting]:
    return [Setting("SVC_RATE_LIMIT_DATA_EXPORT", 5, parse_int(0),
                    "Data exports (`GET /me/data-export`) per hour per user (0 disables).")]


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    return {"privacy_export": RateBucket("rate_limit_data_export", 3600.0, "principal")}


@hookimpl
def register_setting_keys(kernel: Any) -> list[Any]:
    return [
        SettingKey(retention.KEY, retention.validator(kernel), type="object",
                   description="Retention horizons in days per target: { <target>: days } (GET /retention lists them)."),
        SettingKey(erasure.DUAL_CONTROL, erasure.validate_dual_control, type="boolean",
                   description="Erasure requests need a second, different admin's confirmation (default false)."),
    ]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [consent.SUBJECTS]


@hookimpl
async def consent_state(kernel: Any, site_id: str, user_id: str, kind: str) -> bool:
    granted, _ = await consent.subject_state(kernel, site_id, user_id)
    return kind in granted


@hookimpl
async def processing_restricted(kernel: Any, site_id: str, user_id: str) -> bool:
    _, restricted = await consent.subject_state(kernel, site_id, user_id)
    return restricted


@hookimpl
async def marketing_excluded(kernel: Any, site_id: str, emails: list[str]) -> set[str]:
    return await consent.excluded_addresses(kernel, site_id, emails)


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.periodic(retention.JOB, retention.retention_job, cron="41 3 * * *", owner="privacy")
    jobs.task(erasure.CHECKPOINT_JOB, erasure.checkpoint_job, retries=erasure.CHECKPOINT_RETRIES,
              retry_delay=erasure.CHECKPOINT_RETRY_DELAY, owner="privacy")


@hookimpl
async def site_deleted(kernel: Any, site_id: str, conn: Any) -> None:
    for table in (consents, restrictions, erasures):
        await conn.execute(table.delete().where(table.c.site_id == site_id))


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    me = {"auth": "bearer"}
    return [
        Route("/me/consents", routes.ConsentsResource(), **me, openapi=ops(
            get=("The caller's consent decisions, one per type (user principals only)", None, [s.CONSENT], 200))),
        Route("/me/consents/{kind}", routes.ConsentResource(), **me, openapi=ops(
            put=("Record a consent decision (audited consent_granted / consent_withdrawn)", s.CONSENT_BODY,
                 s.CONSENT, 200))),
        Route("/me/restriction", routes.RestrictionResource(), **me, openapi=ops(
            get=("The caller's restriction of processing", None, s.RESTRICTION, 200),
            put=("Set or lift the restriction of processing", s.RESTRICTION_BODY, s.RESTRICTION, 200))),
        Route("/me/data-export", routes.DataExportResource(), **me, rate_limit="privacy_export", openapi=ops(
            get=("The caller's personal data as one JSON document (rate limited, audited)", None, s.OBJ, 200))),
        Route("/me/automated-decisions", routes.AutomatedDecisionsResource(), **me, openapi=ops(
            get=("Agent-caused revisions of the caller's items", None, [s.DECISION], 200))),
        Route("/retention", routes.RetentionResource(), auth="admin", openapi=ops(
            get=("Retention horizons of the site", None, [s.HORIZON], 200))),
        Route("/retention/run", routes.RetentionRunResource(), auth="admin", openapi=ops(
            post=("Prune past the horizons now; counts per target", None, s.RUN, 200))),
        Route("/admin/erasure", routes.ErasuresResource(), auth="admin", openapi=ops(
            get=("Erasure requests of the site (never the filter's values)", None, [s.ERASURE], 200),
            post=("Create an erasure request (stores a subject hash, never the values)", s.ERASURE_BODY,
                  s.ERASURE, 201))),
        Route("/admin/erasure/{request_id}", routes.ErasureResource(), auth="admin", openapi=ops(
            get=("One erasure request", None, s.ERASURE, 200))),
        Route("/admin/erasure/{request_id}/confirm", routes.ErasureConfirmResource(), auth="admin", openapi=ops(
            post=("Second-admin confirmation (erasureDualControl)", None, s.ERASURE, 200))),
        Route("/admin/erasure/{request_id}/execute", routes.ErasureExecuteResource(), auth="admin", openapi=ops(
            post=("Erase: hard delete of the items and all their history, and of what every plugin keeps of "
                  "the subject outside items; audited data_erased", None, s.ERASURE_EXECUTED, 200))),
    ]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """The subject's consents and restriction of processing (the restriction reason is their words)."""
    from kernel.policy.privacy import rows_target

    return [rows_target("consents", consents, [], "Consent decisions of the subject's accounts.",
                        user_column=consents.c.user_id),
            rows_target("restrictions", restrictions, [restrictions.c.reason],
                        "Restrictions of processing of the subject's accounts.", user_column=restrictions.c.user_id)]
