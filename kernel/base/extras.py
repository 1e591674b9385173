"""Optional extras: what a feature needs beyond the SQLite default (docs/operations.md#optional-extras).

``pip install svc-cms`` runs the embedded default (SQLite, local files) without the heavy
libraries of features it does not use. Each of those libraries is an extra, imported only where
its feature runs, and checked where the feature is configured:

- ``postgres`` (psycopg): ``SVC_DATABASE_URL=postgresql://...``, checked at boot;
- ``s3`` (boto3): ``SVC_STORAGE=s3://...``, checked at boot;
- ``ai`` (the MCP SDK): the ``/mcp`` endpoint (``SVC_MCP_ENABLED``), said at start, 503 when called;
- ``store-sync`` (google-auth): docstore pipelines' service accounts, 503 when configured.

The check finds the module without importing it (``importlib.util.find_spec``): cheap at boot.
"""

from __future__ import annotations

import importlib.util

from kernel.base.errors import ApiError, SettingsError

MODULES = {"postgres": "psycopg", "s3": "boto3", "ai": "mcp", "store-sync": "google.auth"}


def installed(extra: str) -> bool:
    """Whether the library of ``extra`` can be imported."""
    try:
        return importlib.util.find_spec(MODULES[extra]) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        return False


def install_line(extra: str) -> str:
    return f"pip install 'svc-cms[{extra}]'"


def missing_message(extra: str, feature: str) -> str:
    """``<feature> needs the '<extra>' extra, which is not installed: pip install ...``."""
    return f"{feature} needs the '{extra}' extra, which is not installed: {install_line(extra)}"


def require_at_boot(extra: str, feature: str) -> None:
    """``SettingsError`` naming the setting and the install line when ``extra`` is missing."""
    if not installed(extra):
        raise SettingsError(missing_message(extra, feature))


def require_for_request(extra: str, feature: str) -> None:
    """503 ``SERVICE_UNAVAILABLE`` when a request needs ``extra`` and the server lacks it: the
    client learns it is the server's installation, not its request."""
    if not installed(extra):
        raise ApiError(503, "SERVICE_UNAVAILABLE",
                       f"{feature} is not available on this server: the operator installs the '{extra}' "
                       f"extra ({install_line(extra)})")
