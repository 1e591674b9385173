"""The git plugin's own extension points (published through ``register_hookspecs``).

git reaches the agents plugin through these, so that it requires only what it cannot work
without: GitOps (``POST /integrations/git/{id}/gitops/sync``) syncs ``svc/intents.json`` into the
store ``gitops_intents`` answers, and a failed CI run is told to ``git_ci_failed``. The agents
plugin implements both (``optionalhook=True``: it does not require git). Without an answer, GitOps
sync is 404 ``NOT_FOUND`` and a failed CI run is only audited.
"""

from __future__ import annotations

from typing import Any

from kernel.hooks.hookspecs import hookspec


@hookspec(firstresult=True)
def gitops_intents(kernel: Any) -> Any:
    """Return the store of a site's content intents that GitOps reconciles, or ``None``: an object
    with ``async export_intents(ctx) -> list[dict]`` (each ``{ key, title, description, role,
    trigger, budget, status }``) and ``async import_intents(ctx, given, *, source) -> { created,
    updated, unchanged }`` (upsert by ``key``; 400 ``VALIDATION_FAILED`` writes nothing). Both act
    as ``ctx.principal``. First non-None answer wins. Synchronous.
    """


@hookspec
def git_ci_failed(ctx: Any, role: str, detail: dict[str, Any]) -> Any:
    """A CI run of a connected repository failed (called by the job ``git.incident``, retried
    until every implementation returns). ``ctx`` acts for the site anonymously; ``role`` is the
    agent role the git sync acts as (``git-sync``); ``detail`` is ``{ integrationId, provider,
    number, runId, name, sha, conclusion }``. May be async.
    """
