"""Version and metrics: what the utils routes answer, without Falcon."""

from __future__ import annotations

import hmac
import platform
from typing import Any

from prometheus_client import generate_latest

from kernel import __version__
from kernel.auth.tokens import bearer_token
from kernel.base.errors import ApiError
from kernel.metrics.stored import refresh_stored_metrics

API_VERSION = "1"


def version_info() -> dict[str, str]:
    """``{ name, version, apiVersion, python }`` of this deployment."""
    return {"name": "svc", "version": __version__, "apiVersion": API_VERSION,
            "python": platform.python_version()}


async def metrics_text(kernel: Any) -> bytes:
    """The app's Prometheus registry in the text exposition format, with the database figures
    (job queue, event lag) read again when older than ``SVC_METRICS_REFRESH_SECONDS``; under
    ``svc serve --workers N``, every worker's figures (``kernel.metrics.node``)."""
    await refresh_stored_metrics(kernel)
    metrics = kernel.state["metrics"]
    metrics.before_scrape()
    return generate_latest(metrics.registry)


def metrics_refusal(kernel: Any, authorization: str | None) -> ApiError | None:
    """Why this scrape is refused, or None (docs/operations.md, "Who may scrape /metrics").

    - ``SVC_METRICS_TOKEN`` set: the header must carry it as a Bearer token (401 otherwise),
      whatever else is set.
    - No token: anonymous scrapes are served where an operator turned them on
      (``SVC_METRICS_PUBLIC``) or on a development machine (``SVC_ENV=development``); in
      production without either, ``/metrics`` is off: 404, as a route that is not served here.
    """
    settings = kernel.settings
    expected = settings.get("metrics_token") or ""
    if expected:
        given = bearer_token(authorization) or ""
        # Constant time, so the token cannot be guessed byte by byte from response times.
        if hmac.compare_digest(given.encode(), expected.encode()):
            return None
        return ApiError(401, "UNAUTHENTICATED", "This scrape needs 'Authorization: Bearer <SVC_METRICS_TOKEN>'",
                        headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
    if settings.get("metrics_public") or settings.get("env") == "development":
        return None
    return ApiError(404, "NOT_FOUND", "/metrics is off in production: set SVC_METRICS_TOKEN (scrapers send it "
                    "as a Bearer token), or SVC_METRICS_PUBLIC=true to serve it to anyone")
