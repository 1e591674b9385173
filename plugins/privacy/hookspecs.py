"""The privacy plugin's own hooks (published through ``register_hookspecs``): consent and
restriction as the privacy plugin keeps them. Other plugins never call them directly: they read
``kernel.policy.privacy.consent_granted``, ``restricted`` and ``marketing_excluded``, which apply a
documented default when the privacy plugin is disabled (the hooks then do not exist).
"""

from __future__ import annotations

from typing import Any

from kernel.hooks.hookspecs import hookspec


@hookspec(firstresult=True)
def consent_state(kernel: Any, site_id: str, user_id: str, kind: str) -> bool | None:
    """Whether ``user_id`` granted the consent ``kind`` (``marketing``, ``analytics``,
    ``personalization``, ``functional``, ``sale_share``) in ``site_id``: ``True``, ``False``, or
    ``None`` when the implementation keeps no consent store (the caller then applies its own
    default, see ``kernel.policy.privacy``). Implemented by this plugin, which answers ``False``
    for a user who never decided. Read through ``kernel.policy.privacy.consent_granted``, never
    directly. Called on hot paths (a pageview beacon): answer from a cache. First result wins.
    May be async.
    """


@hookspec(firstresult=True)
def processing_restricted(kernel: Any, site_id: str, user_id: str) -> bool | None:
    """Whether ``user_id`` restricted the processing of their data in ``site_id`` (GDPR art. 18):
    while ``True`` their data is left out of marketing sends, analytics attribution and automated
    (agent) processing. ``None``: no implementation keeps restrictions (``False`` then). Read
    through ``kernel.policy.privacy.restricted``. Answer from a cache. First result wins. May be async.
    """


@hookspec(firstresult=True)
def marketing_excluded(kernel: Any, site_id: str, emails: list[str]) -> set[str] | None:
    """The lower-cased addresses among ``emails`` that must get no marketing mail in ``site_id``:
    users of the site without ``marketing`` consent, or with restricted processing. Addresses
    of no user of the site are not in the answer (their unsubscribe governs them). ``None``:
    no implementation keeps consent. Read through ``kernel.policy.privacy.marketing_excluded``.
    First result wins. May be async.
    """
