"""The accounts plugin's own extension points (published through ``register_hookspecs``).

A plugin may give a site its own version of an account email (verification, password reset,
invitation...): the email plugin answers from the site's email templates. Without an answer the
built-in text of ``plugins/accounts/selfservice/emails.py`` is sent. A plugin may also give the mailer a
site's account emails leave through (``account_mailer``): the email plugin answers with the
site's own SMTP server (``/email/smtp``); without an answer the server's mailer sends them.
"""

from __future__ import annotations

from typing import Any

from kernel.hooks.hookspecs import hookspec


@hookspec
def compose_account_email(kernel: Any, site_id: str, key: str, to: list[str],
                          variables: dict[str, Any]) -> Any:
    """Return a ``kernel.mailer.OutgoingEmail`` replacing the built-in account email ``key``
    (``account.verification``, ``account.existing-account``, ``account.password-reset``,
    ``account.invitation``, ``account.added-to-site``) for ``to`` in ``site_id``, or ``None``
    to keep the built-in one. ``variables``: ``siteName``, ``email`` and, when the email has
    one, ``url`` (a live one-time link). First non-None answer wins; an exception or an answer
    that cannot be sent falls back to the built-in email. May be async.
    """


@hookspec
def account_mailer(kernel: Any, site_id: str) -> Any:
    """Return the ``kernel.mailer.Mailer`` that sends ``site_id``'s account emails (a site's own
    SMTP server), or ``None`` to use the server's ``kernel.mailer``. Asked only for an account
    that is the site's alone (not the instance admin, a member of no other site): the email may
    carry a live link to an instance-wide account. First non-None answer wins.
    An ``ApiError`` (the site's settings no longer open) fails the send as a delivery failure,
    never falling back to the server's account. May be async.
    """
