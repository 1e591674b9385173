"""Version and metrics: what the utils routes answer, without Falcon."""

from __future__ import annotations

import hmac
import platform
from typing import Any

from prometheus_client import generate_latest

from kernel import __version__
from kernel.auth.tokens import bearer_token
from kernel.http.stored_metrics import refresh_stored_metrics

API_VERSION = "1"


def version_info() -> dict[str, str]:
    """``{ name, version, apiVersion, python }`` of this deployment."""
    return {"name": "svc", "version": __version__, "apiVersion": API_VERSION,
            "python": platform.python_version()}


async def metrics_text(kernel: Any) -> bytes:
    """The app's Prometheus registry in the text exposition format, with the database figures
    (job queue, event lag) read again when older than ``SVC_METRICS_REFRESH_SECONDS``; under
    ``svc serve --workers N``, every worker's figures (``kernel.http.node_metrics``)."""
    await refresh_stored_metrics(kernel)
    metrics = kernel.state["metrics"]
    metrics.before_scrape()
    return generate_latest(metrics.registry)


def metrics_token_accepted(kernel: Any, authorization: str | None) -> bool:
    """True when no ``SVC_METRICS_TOKEN`` is set, or the header carries it as a Bearer token."""
    expected = kernel.settings.get("metrics_token") or ""
    if not expected:
        return True
    given = bearer_token(authorization) or ""
    # Constant time, so the token cannot be guessed byte by byte from response times.
    return hmac.compare_digest(given.encode(), expected.encode())
