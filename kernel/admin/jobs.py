"""The kernel's job hooks: the instance admin's status route ``GET /admin/jobs``."""

from __future__ import annotations

import re
from typing import Any

from kernel.base.errors import ApiError
from kernel.hooks.hookspecs import hookimpl
from kernel.http.media import send_data
from kernel.http.params import int_param
from kernel.http.routing import Route

name = "kernel.jobs"

SITE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
STATUS_SCHEMA = {
    "type": "object",
    "properties": {
        "jobs": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
        "totals": {"type": "object", "additionalProperties": True},
        "recentFailures": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
        "consumer": {"type": ["string", "null"]},
    },
}


class JobsStatusResource:
    """``GET /admin/jobs[?site=<id>&failures=<n>]``: the queue as ``svc jobs`` shows it."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        site = req.get_param("site")
        if site is not None and not SITE_ID.match(site):
            raise ApiError.validation("'site' must be a site id", path=["query", "site"])
        failures = int_param(req, "failures", 10, minimum=0, maximum=100)
        assert failures is not None
        send_data(resp, await self.kernel.jobs.status(site_id=site, failures=failures))


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    from kernel.http.openapi import ops

    return [Route("/admin/jobs", JobsStatusResource(kernel), site="none", auth="instance-admin", plugin=name,
                  openapi=ops(get=("Job queue status: registered jobs, counts, recent failures", None,
                                   STATUS_SCHEMA, 200)))]
