"""The HTML a person sees after clicking an unsubscribe link: confirmation, undo, errors.

Self-contained (inline style, no script, no outside resources) and served with a strict
Content-Security-Policy. Link scanners follow GET links, so the confirmation page carries a
button that undoes the unsubscribe with the same token.
"""

from __future__ import annotations

from html import escape

CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
UNDO_PATH = "/api/v1/email/unsubscribe/undo"

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}}
h1{{font-size:1.4rem}} button{{font:inherit;padding:.5rem 1rem;cursor:pointer}}</style>
</head><body><main>
<h1 id="title">{title}</h1>
{body}
</main></body></html>
"""


def _page(title: str, body: str) -> str:
    return _PAGE.format(title=escape(title), body=body)


def unsubscribed(email: str, token: str) -> str:
    return _page("You are unsubscribed", (
        f'<p id="message">{escape(email)} will no longer receive these emails.</p>'
        f'<form method="post" action="{UNDO_PATH}">'
        f'<input type="hidden" name="token" value="{escape(token, quote=True)}">'
        '<p>Clicked by mistake?</p><button type="submit" id="undo">Subscribe me again</button></form>'))


def resubscribed(email: str, changed: bool, still_suppressed: bool) -> str:
    if changed:
        return _page("You are subscribed again",
                     f'<p id="message">{escape(email)} will receive these emails again.</p>')
    if still_suppressed:
        return _page("Still unsubscribed", '<p id="message">This address was removed from the list by '
                                           "the sender; contact them to receive their emails again.</p>")
    return _page("Nothing to undo", f'<p id="message">{escape(email)} is subscribed.</p>')


def invalid(reason: str) -> str:
    return _page("This link does not work", f'<p id="message">{escape(reason)}</p>')
