"""The flows plugin's own extension point (published through ``register_hookspecs``).

An extension adds an operation that flows can use::

    from plugins.flows.api import Operation, Option, OptionError

    async def shout(ctx, options):
        return {"text": str(options["text"]).upper()}

    def check(options):
        if not isinstance(options.get("text"), str):
            raise OptionError("text", "'text' must be a string")

    @hookimpl(optionalhook=True)
    def register_flow_operations(kernel):
        return [Operation("shout", shout, options={"text": Option("template", required=True, label="Text")},
                          validate=check)]

The flows plugin's own operations (``log``, ``request``, ``item-create`` ...) register through
this hook in exactly this way (``builtins.py``). Each option is declared with an ``Option``
(type ``string``, ``template``, ``number``, ``boolean``, ``enum``, ``json``, ``collection`` or
``field``; ``required``, ``default``, ``choices``, ``label``): ``GET /flows/operations`` lists it
as ``optionSchema``, the studio builds the step's form from it, and an active flow's step
options are checked against it on save. A plain string is still taken as an untyped hint.
"""

from __future__ import annotations

from typing import Any

from kernel.hooks.hookspecs import hookspec


@hookspec
def register_flow_operations(kernel: Any) -> list[Any] | None:
    """Return the ``plugins.flows.api.Operation`` objects the plugin provides.

    Called once when the app starts (and again when an extension is loaded or unloaded, so the
    registry follows what is installed). Keys are unique across plugins: a second operation
    with a taken key stops the app at boot with a message naming both. Synchronous.
    A plugin that does not declare ``requires = ("flows",)`` marks its implementation
    ``@hookimpl(optionalhook=True)`` so the deployment still starts with flows disabled.
    """


@hookspec(firstresult=True)
def send_flow_mail(kernel: Any, site_id: str, body: dict[str, Any], principal: Any, request_id: str) -> Any:
    """Send the email of a flow's ``mail`` step through the site's email service; the first
    answer wins. ``body`` is a ``POST /email/send`` body (``to``, ``templateKey`` or ``inline``,
    ``variables``, ``category``). Return ``(status, answer)`` with the send's answer
    (``{ sent, queued, failed, suppressed, withoutConsent, messageIds, batchId }``), raise
    ``ApiError``, or return None to pass. The email plugin implements it (``optionalhook``), so
    a flow mails through templates, the suppression list, consent and the unsubscribe headers;
    without an implementation the step sends its plain text through the kernel's mailer.
    May be async.
    """
