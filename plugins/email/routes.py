"""Falcon resources of the email plugin (the services do the work)."""

from __future__ import annotations

from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qs

from kernel import ApiError
from kernel.http.media import read_body, read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.email import catalog, page, sending, smtp_site, suppressions

MAX_ID = 36
MAX_FORM_BYTES = 16 * 1024


def _id(raw: str, missing: Any) -> str:
    if not raw or len(raw) > MAX_ID:
        raise missing()
    return raw


class CapabilitiesResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await sending.capabilities(ctx.kernel, ctx.require_site()))


class LayoutsResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        data = await catalog.list_layouts(request_context(req))
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await catalog.create_layout(request_context(req), await read_json(req)), status=201)


class LayoutResource:
    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await catalog.update_layout(ctx, _id(id, catalog.layout_not_found), await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        await catalog.delete_layout(request_context(req), _id(id, catalog.layout_not_found))
        send_no_content(resp)


class TemplatesResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        data = await catalog.list_templates(request_context(req))
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await catalog.create_template(request_context(req), await read_json(req)), status=201)


class TemplateResource:
    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await catalog.update_template(ctx, _id(id, catalog.template_not_found),
                                                      await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        await catalog.delete_template(request_context(req), _id(id, catalog.template_not_found))
        send_no_content(resp)


class PreviewResource:
    # The path segment is the template's key (Falcon wants one field name per level: ``{id}``).
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        body = await read_json(req, required=False)
        send_data(resp, await catalog.preview(request_context(req), id, body))


class SourcePreviewResource:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await catalog.preview_source(request_context(req), await read_json(req)))


class SendResource:
    async def on_post(self, req: Any, resp: Any) -> None:
        status, data = await sending.send(request_context(req), await read_json(req))
        send_data(resp, data, status=status)


class TestResource:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await sending.send_test(request_context(req), await read_json(req)))


class BatchesResource:
    """-- govern43: ``GET /email/batches``: the site's queued and scheduled sends, newest first."""

    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req, default_limit=50, max_limit=200)
        data, total = await sending.list_batches(request_context(req), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class BatchResource:
    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await sending.get_batch(request_context(req), id))


class BatchCancelResource:
    """-- more43: ``POST /email/batches/{id}/cancel``."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await sending.cancel_batch(request_context(req), id))


class SuppressionsResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req, default_limit=50, max_limit=200)
        search = req.get_param("search")
        if search is not None and len(search) > 320:
            raise ApiError.validation("'search' is at most 320 characters", path=["search"])
        data, total = await suppressions.list_page(request_context(req), limit, offset, search)
        send_data(resp, data, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await suppressions.add(request_context(req), await read_json(req)), status=201)


class SuppressionResource:
    async def on_delete(self, req: Any, resp: Any, email: str) -> None:
        await suppressions.remove(request_context(req), email)
        send_no_content(resp)


async def _form_token(req: Any) -> str | None:
    """``token`` from the query, else from an urlencoded or multipart form body (RFC 8058)."""
    token = req.get_param("token")
    if token:
        return token
    raw = await read_body(req, MAX_FORM_BYTES)
    kind = (req.content_type or "").split(";")[0].strip().lower()
    if kind == "multipart/form-data":
        head = f"Content-Type: {req.content_type}\r\n\r\n".encode()
        message = BytesParser(policy=HTTP).parsebytes(head + raw)
        for part in message.iter_parts() if message.is_multipart() else ():
            if part.get_param("name", header="content-disposition") == "token":
                return str(part.get_content()).strip()
        return None
    values = parse_qs(raw.decode("utf-8", "replace"), max_num_fields=20)
    return (values.get("token") or [None])[0]


def _html(resp: Any, status: int, markup: str) -> None:
    resp.status = status
    resp.content_type = "text/html; charset=utf-8"
    resp.set_header("Content-Security-Policy", page.CSP)
    resp.set_header("X-Frame-Options", "DENY")
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("Referrer-Policy", "no-referrer")
    resp.text = markup


class UnsubscribeResource:
    """``GET`` (a person: an HTML page) and ``POST`` (RFC 8058 one-click: JSON) unsubscribe."""

    async def on_get(self, req: Any, resp: Any) -> None:
        token = req.get_param("token")
        try:
            done = await suppressions.unsubscribe(request_context(req), token, method="link")
        except ApiError as exc:
            if exc.status != 400:
                raise
            _html(resp, 400, page.invalid("The unsubscribe link is not valid. Copy the whole link from the "
                                          "email, or contact the sender."))
            return
        _html(resp, 200, page.unsubscribed(done["email"], token))

    async def on_post(self, req: Any, resp: Any) -> None:
        done = await suppressions.unsubscribe(request_context(req), await _form_token(req), method="one-click")
        send_data(resp, {"unsubscribed": True, "changed": done["changed"]})


class UndoResource:
    """``POST /email/unsubscribe/undo``: the confirmation page's button (form post, HTML answer)."""

    async def on_post(self, req: Any, resp: Any) -> None:
        try:
            done = await suppressions.resubscribe(request_context(req), await _form_token(req))
        except ApiError as exc:
            if exc.status != 400:
                raise
            _html(resp, 400, page.invalid("This link is not valid."))
            return
        _html(resp, 200, page.resubscribed(done["email"], done["changed"], done["suppressed"]))


class SmtpResource:
    """``GET, PUT, DELETE /email/smtp`` (site admin): the site's own SMTP server."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await smtp_site.get(request_context(req)))

    async def on_put(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await smtp_site.put(ctx, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any) -> None:
        await smtp_site.delete(request_context(req))
        send_no_content(resp)
