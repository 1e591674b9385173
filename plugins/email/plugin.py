"""Hook implementations of the email plugin (its table of contents)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base.settings import parse_int
from plugins.email import account_emails, api, routes, schemas, sending, smtp_site, tables

name = "email"
requires = ("utils",)


def parse_base_url(raw: str) -> str:
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError("must be an http(s) URL such as https://api.example.com")
    return raw.strip().rstrip("/")


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_EMAIL_BASE_URL", "http://127.0.0.1:8000", parse_base_url,
                "Base URL of this API as mail recipients reach it: marketing mail links to "
                "`{base}/api/v1/email/unsubscribe?token=...` (List-Unsubscribe)."),
        Setting("SVC_RATE_LIMIT_EMAIL", 60, parse_int(0),
                "Email sends (`/email/send`, `/email/test`) per minute per site, all senders together (0 disables)."),
        Setting("SVC_RATE_LIMIT_EMAIL_UNSUBSCRIBE", 60, parse_int(0),
                "Unsubscribe requests per minute per client IP (bucket `email_unsubscribe`; 0 disables)."),
        Setting("SVC_EMAIL_QUEUE_THRESHOLD", 20, parse_int(0),
                "Sends to more recipients than this go through the job queue (202), one job per recipient."),
    ]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    # An erasure (privacy plugin) takes the erased items' addresses out of queued mail.
    bus.on_filter("items.delete", sending.forget_erased_addresses)


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    """-- more43: a scheduled send that started cannot be cancelled."""
    return {"BATCH_STARTED": (409, "The scheduled send has started and can no longer be cancelled.")}


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.task(sending.JOB, sending.deliver_job, retries=5, retry_delay=30, retry_max_delay=3600, owner="email",
              on_give_up=sending.deliver_gave_up)  # -- more43: retries run out: counted failed
    jobs.periodic(sending.PRUNE_JOB, sending.prune_job, cron="17 4 * * *", owner="email")


@hookimpl
async def compose_account_email(kernel: Any, site_id: str, key: str, to: list[str],
                                variables: dict[str, Any]) -> Any:
    """A site's own template for an account email (accounts' hook), else None."""
    return await account_emails.compose(kernel, site_id, key, to, variables)


@hookimpl
async def account_mailer(kernel: Any, site_id: str) -> Any:
    """The site's own SMTP server for its account emails (accounts' hook), else None (the server's)."""
    mailer = await smtp_site.mailer_for(kernel, site_id)
    return None if mailer is kernel.mailer else mailer


@hookimpl
async def site_deleted(kernel: Any, site_id: str, conn: Any) -> None:
    """A deleted site's templates before its layouts (they reference them), then the rest."""
    for table in (tables.templates, tables.layouts, tables.suppressions, tables.batches):
        await conn.execute(table.delete().where(table.c.site_id == site_id))


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    return {"email_unsubscribe": RateBucket("rate_limit_email_unsubscribe", 60.0, "ip")}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    s = schemas
    public = {"site": "optional", "auth": "public", "authenticate": False, "rate_limit": "email_unsubscribe"}
    return [
        Route("/email/capabilities", routes.CapabilitiesResource(), auth="admin", openapi=ops(
            get=("Whether SMTP is configured, and the default sender", None, s.OBJ, 200))),
        Route("/email/smtp", routes.SmtpResource(), auth="admin", openapi=ops(
            get=("The site's own SMTP server (null: the server's); never the password", None, s.SMTP, 200),
            put=("Set the site's SMTP server (password write-only, sealed)", s.SMTP_BODY, s.SMTP, 200),
            delete=("Go back to the server's SMTP settings", None, None, 204))),
        Route("/email/layouts", routes.LayoutsResource(), auth="admin", openapi=ops(
            get=("List the site's email layouts", None, [s.LAYOUT], 200),
            post=("Create a layout (html contains {{content}})", s.LAYOUT_BODY, s.LAYOUT, 201))),
        Route("/email/layouts/{id}", routes.LayoutResource(), auth="admin", openapi=ops(
            patch=("Update a layout", s.LAYOUT_BODY, s.LAYOUT, 200), delete=("Delete a layout", None, None, 204))),
        Route("/email/templates", routes.TemplatesResource(), auth="admin", openapi=ops(
            get=("List the site's email templates", None, [s.TEMPLATE], 200),
            post=("Create a template (key unique per site)", s.TEMPLATE_BODY, s.TEMPLATE, 201))),
        Route("/email/templates/{id}", routes.TemplateResource(), auth="admin", openapi=ops(
            patch=("Update a template", s.TEMPLATE_BODY, s.TEMPLATE, 200),
            delete=("Delete a template", None, None, 204))),
        Route("/email/templates/preview", routes.SourcePreviewResource(), auth="admin", openapi=ops(
            post=("Render an unsaved template (and layout) without storing or sending", s.SOURCE_PREVIEW_BODY,
                  s.PREVIEW, 200))),
        Route("/email/templates/{id}/preview", routes.PreviewResource(), auth="admin", openapi=ops(
            post=("Render a template without sending", s.PREVIEW_BODY, s.PREVIEW, 200))),
        Route("/email/send", routes.SendResource(), auth="admin", openapi=ops(
            post=("Send, or queue for many recipients (202)", s.SEND_BODY, s.SEND, 200))),
        # -- govern43: a queued or scheduled send's progress and outcome
        Route("/email/batches", routes.BatchesResource(), auth="admin", openapi=ops(
            get=("The site's queued and scheduled sends with their progress", None, [s.BATCH], 200))),
        Route("/email/batches/{id}", routes.BatchResource(), auth="admin", openapi=ops(
            get=("One queued or scheduled send: sent, failed, skipped, pending", None, s.BATCH, 200))),
        Route("/email/batches/{id}/cancel", routes.BatchCancelResource(), auth="admin", openapi=ops(  # -- more43
            post=("Cancel a scheduled send before it starts (409 BATCH_STARTED after)", None, s.BATCH, 200))),
        Route("/email/test", routes.TestResource(), auth="admin", openapi=ops(
            post=("Send one test email", s.TEST_BODY, s.OBJ, 200))),
        Route("/email/suppressions", routes.SuppressionsResource(), auth="admin", openapi=ops(
            get=("List suppressed addresses", None, [s.SUPPRESSION], 200),
            post=("Suppress an address (audited)", s.SUPPRESSION_BODY, s.SUPPRESSION, 201))),
        Route("/email/suppressions/{email}", routes.SuppressionResource(), auth="admin", openapi=ops(
            delete=("Lift a suppression (audited)", None, None, 204))),
        Route("/email/unsubscribe", routes.UnsubscribeResource(), **public, openapi={
            "get": s.html_operation("Unsubscribe from a link; answers an HTML confirmation"),
            **ops(post=("RFC 8058 one-click unsubscribe (token in the query or form body)", None, s.OBJ, 200))}),
        Route("/email/unsubscribe/undo", routes.UndoResource(), **public, openapi={
            "post": s.html_operation("Undo an unsubscribe from the confirmation page; answers an HTML page")}),
    ]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``emailBatches``: kept batches whose message holds the subject (the queued sends are jobs:
    the email filter on ``privacy.erase`` and the kernel's ``jobs`` target take them)."""
    from kernel.policy.privacy import rows_target
    from plugins.email.tables import batches

    return [rows_target("emailBatches", batches, [batches.c.message],
                        "Email batches whose message (recipients, variables, rendered text) holds the subject.")]


@hookimpl(optionalhook=True)
async def send_flow_mail(kernel: Any, site_id: str, body: dict[str, Any], principal: Any,
                         request_id: str) -> tuple[int, dict[str, Any]]:
    """A flow's ``mail`` step (the flows plugin's hook): the same send as ``POST /email/send``
    (templates, suppressions, consent, RFC 8058 headers, the site's SMTP, its rate limit)."""
    return await api.send(kernel, site_id, body, principal=principal, request_id=request_id)
