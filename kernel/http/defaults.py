"""The kernel's default hook implementations, marked to run last so plugins can override them."""

from __future__ import annotations

from typing import Any

from kernel.hooks.hookspecs import hookimpl
from kernel.http.errors import default_exception_answer


@hookimpl(trylast=True)
def resolve_site(request: Any, kernel: Any) -> str | None:
    """``X-Svc-Site``, else the subdomain of ``SVC_BASE_DOMAIN``, else ``None``."""
    header = request.get_header("X-Svc-Site")
    if header is not None and header.strip():
        return header.strip()
    base = kernel.settings.base_domain.strip().lower().lstrip(".")
    host = (request.host or "").lower()
    if base and host.endswith("." + base):
        sub = host[: -len(base) - 1]
        if sub and "." not in sub:
            return sub
    return None


@hookimpl(trylast=True)
def handle_exception(request: Any, exc: BaseException, kernel: Any) -> Any:
    return default_exception_answer(request, exc)
