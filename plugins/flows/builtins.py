"""The built-in operations. They register through ``register_flow_operations`` (plugin.py), as
an extension's would: nothing here is special to the runner.

``log``, ``transform``, ``jsonata``, ``condition``, ``request``, ``item-create``,
``item-read``, ``item-update``, ``item-delete``, ``mail`` and ``notify``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson

from kernel.base.errors import ApiError
from kernel.base.outbound import OutboundRefused, check_url
from kernel.base.outbound import client as outbound_client
from kernel.hooks.plugins import call_first
from kernel.mailer import DeliveryFailed as MailFailed
from kernel.mailer import MailerNotConfigured, OutgoingEmail, check_address
from plugins.flows import data as flowdata
from plugins.flows.api import Branch, Operation, OperationContext, Option, OptionError, StepFailed
from plugins.items import api as items
from plugins.realtime import api as realtime
from plugins.utils.api import MAX_EXPRESSION_CHARS, JsonataRunner

if TYPE_CHECKING:
    import httpx

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
SEVERITIES = ("info", "warning", "error", "success")
CLIENT_KEY = "flows.http"
RUNNER_KEY = "flows.jsonata"
MAX_TEXT = 10_000


# ---------------------------------------------------------------------- option checks

def _templated(value: Any) -> bool:
    return isinstance(value, str) and "{{" in value


def _string(options: dict[str, Any], name: str, *, required: bool = True, max_len: int = MAX_TEXT) -> None:
    value = options.get(name)
    if value is None:
        if required:
            raise OptionError(name, f"'{name}' is required")
        return
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > max_len:
        raise OptionError(name, f"'{name}' must be a non-empty string of at most {max_len} characters")


def _only(options: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in options:
        if key not in allowed:
            raise OptionError(key, f"Unknown option '{key}' (allowed: {', '.join(allowed) or 'none'})")


def _collection(options: dict[str, Any]) -> None:
    _string(options, "collection", max_len=64)


def _key(options: dict[str, Any], required: bool) -> None:
    value = options.get("key")
    if value is None and not required:
        return
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip() or len(str(value)) > 200:
        raise OptionError("key", "'key' must be an item id (a string, or a template giving one)")


def _payload(options: dict[str, Any]) -> None:
    value = options.get("payload")
    if not isinstance(value, dict) and not _templated(value):
        raise OptionError("payload", "'payload' must be an object (or a template giving one)")


# ---------------------------------------------------------------------- log, transform

async def run_log(ctx: OperationContext, options: dict[str, Any]) -> Any:
    message = options.get("message")
    return {"message": message if isinstance(message, str) else orjson.dumps(message, default=str).decode()[:MAX_TEXT]}


def check_log(options: dict[str, Any]) -> None:
    _only(options, ("message",))
    _string(options, "message")


async def run_transform(ctx: OperationContext, options: dict[str, Any]) -> Any:
    return options.get("json")


def check_transform(options: dict[str, Any]) -> None:
    _only(options, ("json",))
    if "json" not in options:
        raise OptionError("json", "'json' is required: the value this step outputs")


# ---------------------------------------------------------------------- jsonata, condition

def _runner(kernel: Any) -> JsonataRunner:
    found = kernel.state.get(RUNNER_KEY)
    if found is None:
        settings = kernel.settings
        found = JsonataRunner(settings.jsonata_timeout_ms, settings.get("flows_max_output_bytes"))
        kernel.state[RUNNER_KEY] = found
    return found


# '$trigger', '$last' and the steps are fields of the input; bind them as JSONata variables too.
_BIND = "($trigger := $lookup($$, '$trigger'); $last := $lookup($$, '$last');\n"


async def run_jsonata(ctx: OperationContext, options: dict[str, Any]) -> Any:
    expression = options["expression"]
    try:
        return await _runner(ctx.kernel).evaluate(_BIND + expression + "\n)", ctx.data)
    except ApiError as exc:
        # 503: every evaluation slot was busy; trying again may succeed.
        raise StepFailed(f"jsonata: {exc.message}", code="JSONATA_FAILED",
                         retryable=exc.code == "SERVICE_UNAVAILABLE") from exc


def check_jsonata(options: dict[str, Any]) -> None:
    _only(options, ("expression",))
    _string(options, "expression", max_len=MAX_EXPRESSION_CHARS - len(_BIND) - 4)


async def run_condition(ctx: OperationContext, options: dict[str, Any]) -> Any:
    passed = flowdata.matches(options["filter"], ctx.data)
    return Branch({"passed": passed}, passed)


def check_condition(options: dict[str, Any]) -> None:
    _only(options, ("filter",))
    try:
        flowdata.check_condition(options.get("filter"), [])
    except ApiError as exc:
        raise OptionError(["filter", *(exc.details[0].path or [])], exc.message) from exc


# ---------------------------------------------------------------------- request

def client(kernel: Any) -> httpx.AsyncClient:
    import httpx

    timeout = httpx.Timeout(kernel.settings.get("flows_request_timeout"), connect=5.0)
    return outbound_client(kernel, CLIENT_KEY, timeout=timeout, max_connections=50, max_keepalive=10)


def check_request(options: dict[str, Any]) -> None:
    _only(options, ("url", "method", "headers", "body"))
    url = options.get("url")
    if not _templated(url):
        try:
            check_url(url)
        except ApiError as exc:
            raise OptionError("url", exc.message) from exc
    method = options.get("method", "GET")
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise OptionError("method", f"'method' is one of {', '.join(METHODS)}")
    headers = options.get("headers", {})
    if not isinstance(headers, dict) or len(headers) > 50 or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= 200 and len(v) <= 4000 for k, v in headers.items()):
        raise OptionError("headers", "'headers' must be an object of at most 50 string values")


async def run_request(ctx: OperationContext, options: dict[str, Any]) -> Any:
    import httpx

    method = str(options.get("method") or "GET").upper()
    try:
        url = check_url(options.get("url"))
    except ApiError as exc:
        raise StepFailed(f"request: {exc.message}", code="URL_REFUSED") from exc
    headers = {str(k): str(v) for k, v in (options.get("headers") or {}).items()}
    body = options.get("body")
    content: bytes | None = None
    if body is not None and method not in ("GET", "HEAD"):
        if isinstance(body, str):
            content = body.encode()
        else:
            content = orjson.dumps(body)
            headers.setdefault("Content-Type", "application/json")
    limit = int(ctx.kernel.settings.get("flows_max_response_bytes"))
    idempotent = method in ("GET", "HEAD")
    try:
        async with client(ctx.kernel).stream(method, url, content=content, headers=headers) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise StepFailed(f"request: the response is larger than {limit} bytes", code="RESPONSE_TOO_LARGE")
                chunks.append(chunk)
    except OutboundRefused as exc:
        raise StepFailed(f"request: refused address: {exc}", code="URL_REFUSED") from exc
    except httpx.TimeoutException as exc:
        raise StepFailed(f"request: timed out ({type(exc).__name__})", code="REQUEST_TIMEOUT",
                         retryable=idempotent) from exc
    except httpx.HTTPError as exc:
        raise StepFailed(f"request: {type(exc).__name__}: {exc}"[:300], code="REQUEST_FAILED",
                         retryable=idempotent) from exc
    raw = b"".join(chunks)
    data: Any = raw.decode("utf-8", "replace")
    if "json" in response.headers.get("content-type", ""):
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    output = {"status": response.status_code, "contentType": response.headers.get("content-type"), "data": data}
    if not 200 <= response.status_code < 300:
        kind = "a redirect (not followed)" if 300 <= response.status_code < 400 else f"HTTP {response.status_code}"
        raise StepFailed(f"request: the server answered {kind}", code="REQUEST_FAILED", output=output,
                         retryable=idempotent and response.status_code in (429, 502, 503, 504))
    return output


# ---------------------------------------------------------------------- items

def _item_error(exc: ApiError) -> StepFailed:
    return StepFailed(f"{exc.code}: {exc.message}", code=exc.code)


async def run_item_create(ctx: OperationContext, options: dict[str, Any]) -> Any:
    payload = options.get("payload")
    if not isinstance(payload, dict):
        raise StepFailed("item-create: 'payload' did not render to an object", code="OPTION_INVALID")
    try:
        return await items.create(ctx.items_context(), str(options["collection"]), payload, cause=ctx.cause)
    except ApiError as exc:
        raise _item_error(exc) from exc


async def run_item_read(ctx: OperationContext, options: dict[str, Any]) -> Any:
    actor = ctx.items_context()
    try:
        if options.get("key") is not None:
            return await items.read(actor, str(options["collection"]), str(options["key"]))
        page = await items.list_items(actor, str(options["collection"]), items.query(**(options.get("query") or {})))
        return page.items
    except ApiError as exc:
        raise _item_error(exc) from exc


async def run_item_update(ctx: OperationContext, options: dict[str, Any]) -> Any:
    payload = options.get("payload")
    if not isinstance(payload, dict):
        raise StepFailed("item-update: 'payload' did not render to an object", code="OPTION_INVALID")
    try:
        return await items.update(ctx.items_context(), str(options["collection"]), str(options["key"]), payload,
                                  cause=ctx.cause)
    except ApiError as exc:
        raise _item_error(exc) from exc


async def run_item_delete(ctx: OperationContext, options: dict[str, Any]) -> Any:
    collection, key = str(options["collection"]), str(options["key"])
    try:
        await items.delete(ctx.items_context(), collection, key, cause=ctx.cause)
    except ApiError as exc:
        raise _item_error(exc) from exc
    return {"collection": collection, "key": key, "deleted": True}


def check_item_create(options: dict[str, Any]) -> None:
    _only(options, ("collection", "payload"))
    _collection(options)
    _payload(options)


def check_item_read(options: dict[str, Any]) -> None:
    _only(options, ("collection", "key", "query"))
    _collection(options)
    _key(options, required=False)
    query = options.get("query")
    if query is not None:
        if not isinstance(query, dict):
            raise OptionError("query", "'query' must be an object of list parameters (filter, sort, limit ...)")
        try:
            items.query(**query)
        except ApiError as exc:
            raise OptionError(["query", *(exc.details[0].path or [])[1:]], exc.message) from exc
        except TypeError as exc:
            raise OptionError("query", f"'query' is not valid: {exc}") from exc


def check_item_update(options: dict[str, Any]) -> None:
    _only(options, ("collection", "key", "payload"))
    _collection(options)
    _key(options, required=True)
    _payload(options)


def check_item_delete(options: dict[str, Any]) -> None:
    _only(options, ("collection", "key"))
    _collection(options)
    _key(options, required=True)


# ---------------------------------------------------------------------- mail, notify

def _recipients(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []


MAIL_CATEGORIES = ("transactional", "marketing")


def check_mail(options: dict[str, Any]) -> None:
    _only(options, ("to", "subject", "body", "templateKey", "variables", "category"))
    to = _recipients(options.get("to"))
    if not to or len(to) > 50:
        raise OptionError("to", "'to' is one address or a list of 1 to 50")
    for i, address in enumerate(to):
        if not isinstance(address, str):
            raise OptionError(["to", i], "An address must be a string")
        if not _templated(address):
            try:
                check_address(address, "recipient")
            except ValueError as exc:
                raise OptionError(["to", i], str(exc)) from exc
    if options.get("templateKey") is not None:
        _string(options, "templateKey", max_len=100)
        if options.get("subject") is not None or options.get("body") is not None:
            raise OptionError("templateKey", "Give 'templateKey' or 'subject' and 'body', not both")
    else:
        _string(options, "subject", max_len=998)
        _string(options, "body", max_len=100_000)
    if options.get("variables") is not None and not isinstance(options["variables"], dict):
        raise OptionError("variables", "'variables' is an object")
    if options.get("category", "transactional") not in MAIL_CATEGORIES:
        raise OptionError("category", f"'category' is one of {', '.join(MAIL_CATEGORIES)}")


# The email plugin's codes, as the step's codes have always been named.
MAIL_CODES = {"DELIVERY_FAILED": "EMAIL_FAILED", "VALIDATION_FAILED": "OPTION_INVALID"}


def mail_body(to: list[str], options: dict[str, Any]) -> dict[str, Any]:
    """The ``POST /email/send`` body of a ``mail`` step."""
    body: dict[str, Any] = {"to": to, "category": options.get("category") or "transactional"}
    if options.get("variables"):
        body["variables"] = options["variables"]
    if options.get("templateKey") is not None:
        body["templateKey"] = str(options["templateKey"])
    else:
        body["inline"] = {"subject": str(options.get("subject") or ""), "text": str(options.get("body") or "")}
    return body


async def run_mail(ctx: OperationContext, options: dict[str, Any]) -> Any:
    to = [str(a) for a in _recipients(options.get("to"))]
    sent = None
    if ctx.kernel.pm.hook.send_flow_mail.get_hookimpls():
        try:
            sent = await call_first(ctx.kernel.pm.hook.send_flow_mail, kernel=ctx.kernel, site_id=ctx.site_id,
                                    body=mail_body(to, options), principal=ctx.principal,
                                    request_id=f"flow-run:{ctx.run_id}")
        except ApiError as exc:
            raise StepFailed(f"mail: {exc.message}"[:300], code=MAIL_CODES.get(exc.code, exc.code)) from exc
    if sent is not None:
        _status, answer = sent
        ids = answer.get("messageIds") or []
        return {"messageId": ids[0] if ids else None, "recipients": len(to), **answer}
    if options.get("templateKey") is not None:
        raise StepFailed("mail: templates need the email plugin", code="EMAIL_NOT_CONFIGURED")
    try:
        for address in to:
            check_address(address, "recipient")
        message = OutgoingEmail(to=to, subject=str(options.get("subject") or ""), text=str(options.get("body") or ""))
        message_id = await ctx.kernel.mailer.send(message)
    except MailerNotConfigured as exc:
        raise StepFailed("mail: no SMTP server is configured", code="EMAIL_NOT_CONFIGURED") from exc
    except MailFailed as exc:
        raise StepFailed(f"mail: {exc}"[:300], code="EMAIL_FAILED") from exc
    except ValueError as exc:
        raise StepFailed(f"mail: {exc}"[:300], code="OPTION_INVALID") from exc
    return {"messageId": message_id, "recipients": len(to)}


def check_notify(options: dict[str, Any]) -> None:
    _only(options, ("title", "body", "severity", "deepLink"))
    _string(options, "title", max_len=300)
    _string(options, "body", required=False)
    if options.get("severity", "info") not in SEVERITIES:
        raise OptionError("severity", f"'severity' is one of {', '.join(SEVERITIES)}")
    _string(options, "deepLink", required=False, max_len=2000)


async def run_notify(ctx: OperationContext, options: dict[str, Any]) -> Any:
    try:
        record = await realtime.notify(ctx.kernel, ctx.site_id, kind="flow", title=str(options["title"]),
                                       severity=options.get("severity") or "info",
                                       body=None if options.get("body") is None else str(options["body"]),
                                       deep_link=options.get("deepLink"), entity_id=ctx.flow_id)
    except ApiError as exc:
        raise StepFailed(f"notify: {exc.message}", code=exc.code) from exc
    return {"notificationId": record["id"]}


def operations() -> list[Operation]:
    """The built-in operations, as ``register_flow_operations`` returns them."""
    collection = Option("collection", required=True, label="Collection", description="The collection's name.")
    key = Option("template", also=("number",), label="Item id",
                 description="The item's id (a number, or text: a template may give it).")
    payload = Option("json", required=True, label="Payload",
                     description="An object of field values (templates in strings).")
    return [
        Operation("log", run_log, {"message": Option(
            "template", required=True, label="Message", description="Recorded as the step's output.")},
                  check_log, retry_safe=True, description="Record a message in the run."),
        Operation("transform", run_transform, {"json": Option(
            "json", required=True, label="Output", description="Any JSON (templates in strings); the step's output.")},
                  check_transform, retry_safe=True, description="Output a value built from the data."),
        Operation("jsonata", run_jsonata, {"expression": Option(
            "string", required=True, label="Expression",
            description="JSONata over the data ($trigger, $last, node ids).")},
                  check_jsonata, raw=("expression",), retry_safe=True,
                  description="Evaluate JSONata (bounded in time and memory, in a child process)."),
        Operation("condition", run_condition, {"filter": Option(
            "json", required=True, label="Filter", description='A filter over the data, e.g. {"$trigger": {...}}.')},
                  check_condition, raw=("filter",), retry_safe=True, branches=True,
                  description="Follow the 'true' edges when the filter matches, the 'false' ones otherwise."),
        Operation("request", run_request, {
            "url": Option("template", required=True, label="URL", description="An http(s) URL (a template)."),
            "method": Option("enum", choices=METHODS, default="GET", label="Method"),
            "headers": Option("json", label="Headers", description="An object of string values."),
            "body": Option("json", label="Body", description="Any JSON, or a string in quotes.")},
                  check_request, retry_safe=True,
                  description="An outbound HTTP call (no redirects, timeouts, capped response)."),
        Operation("item-create", run_item_create, {"collection": collection, "payload": payload},
                  check_item_create, description="Create an item as the run's principal."),
        Operation("item-read", run_item_read, {
            "collection": collection, "key": key,
            "query": Option("json", label="Query", description="List parameters (filter, sort, limit ...) "
                            "when no id is given.")},
                  check_item_read, retry_safe=True, description="Read one item or a list as the run's principal."),
        Operation("item-update", run_item_update, {"collection": collection, "key": replace(key, required=True),
                                                   "payload": payload},
                  check_item_update, description="Update an item as the run's principal."),
        Operation("item-delete", run_item_delete, {"collection": collection, "key": replace(key, required=True)},
                  check_item_delete, description="Delete an item as the run's principal."),
        Operation("mail", run_mail, {
            "to": Option("template", required=True, many=True, label="To",
                         description="One address or a list of them."),
            "subject": Option("template", label="Subject"),
            "body": Option("template", label="Body", description="Plain text (a template)."),
            "templateKey": Option("string", label="Template",
                                  description="An email template's key (instead of subject and body)."),
            "variables": Option("json", label="Variables", description="An object (templates in strings)."),
            "category": Option("enum", choices=MAIL_CATEGORIES, default="transactional", label="Category")},
                  check_mail,
                  description="Send an email through the email plugin (templates, suppressions, consent, "
                              "unsubscribe headers), else the kernel's mailer (EMAIL_NOT_CONFIGURED without SMTP)."),
        Operation("notify", run_notify, {
            "title": Option("template", required=True, label="Title"),
            "body": Option("template", label="Body"),
            "severity": Option("enum", choices=SEVERITIES, default="info", label="Severity"),
            "deepLink": Option("string", label="Link", description="A studio path the notification opens.")},
                  check_notify, description="Store a studio notification (broadcast live and by push)."),
    ]
