"""What other plugins may import from email (declare ``requires = ("email",)``).

``send(kernel, site_id, body)`` is ``POST /email/send`` without HTTP: the same body (``to``,
``cc?``, ``replyTo?``, ``variables?``, one of ``templateKey`` or ``inline``, ``category?``), the
same checks, suppression filter, queueing and site rate limit, and the same ``ApiError``s
(400, 404 ``NOT_FOUND``, 429, 502 ``DELIVERY_FAILED``, 503 ``EMAIL_NOT_CONFIGURED``). It
answers ``(status, { category, queued, sent, failed, suppressed, messageIds, batchId })``. A flow's
``mail`` operation is meant to call it, so flows mail through templates and suppressions too.
"""

from __future__ import annotations

import uuid
from typing import Any

from kernel import ANONYMOUS
from kernel.core.context import RequestContext
from plugins.email import sending


async def send(kernel: Any, site_id: str, body: dict[str, Any], *, principal: Any = ANONYMOUS,
               request_id: str | None = None) -> tuple[int, dict[str, Any]]:
    """Send (or queue) an email for ``site_id`` as ``POST /email/send`` would."""
    ctx = RequestContext(kernel=kernel, request_id=request_id or uuid.uuid4().hex, site_id=site_id,
                         principal=principal)
    return await sending.send(ctx, body)
