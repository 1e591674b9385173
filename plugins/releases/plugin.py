"""Hook implementations of the releases plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, hookimpl, ops
from kernel.http.openapi import OptionalBody
from kernel.http.params import RecordItem, RecordList
from plugins.releases import jobs as releases_jobs
from plugins.releases import records, routes, scheduler, schemas, service, skills, windows
from plugins.settings.api import SettingKey

name = "releases"
requires = ("access", "accounts", "items", "realtime", "schema", "settings")


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(records.ERROR_CODES)


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    # Retried: a publish that fails for a passing reason (the database restarting) tries again;
    # a publish that ran records its outcome and is not retried (the job returns normally).
    jobs.task(scheduler.JOB, releases_jobs.run, retries=5, retry_delay=30, retry_max_delay=900, timeout=900,
              owner="releases")


@hookimpl
def register_setting_keys(kernel: Any) -> list[SettingKey]:
    return [SettingKey(windows.TIMEZONE_SETTING, windows.validate_timezone, type="string", public=True,
                       description="The IANA time zone of release maintenance windows (default UTC).")]


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    listing = ops(get=("List releases, newest first (query status, page, limit)", None, [schemas.RELEASE], 200),
                  post=("Create a release (draft, or scheduled with publishAt)", schemas.CREATE_BODY,
                        schemas.RELEASE_DETAIL, 201))
    listing["get"]["parameters"] = list(schemas.LIST_PARAMS)
    member = service.require_member  # the caller before the body: studio members only
    return [
        Route("/releases", RecordList(service.list_page, service.create, paged=True, query=("status",)),
              auth="bearer", caller=member, openapi=listing),
        Route("/releases/{id}", RecordItem(service.get, service.update, service.delete), auth="bearer",
              caller=member, openapi=ops(
            get=("A release with its items", None, schemas.RELEASE_DETAIL, 200),
            patch=("Change meta, addItems, removeItems, publishAt", schemas.PATCH_BODY, schemas.RELEASE_DETAIL,
                   200),
            delete=("Delete a release and its items", None, None, 204))),
        Route("/releases/{id}/publish", routes.PublishResource(), auth="bearer", caller=member,
              openapi=ops(
            post=("Publish now; blocked items are outcomes (HTTP 200)", None, schemas.PUBLISH_RESULT, 200))),
        Route("/releases/{id}/rollback", routes.RollbackResource(), auth="bearer", caller=member,
              openapi=ops(post=("Roll a published release back: each item to its revision before it, in one step",
                                OptionalBody(schemas.ROLLBACK_BODY), schemas.PUBLISH_RESULT, 200))),
    ]


@hookimpl(optionalhook=True)  # the ai plugin's hook; releases does not require ai
def register_ai_skills(kernel: Any) -> list[dict[str, Any]]:
    return skills.ai_skills()
