"""git: integrations with GitHub and GitLab repositories (issue 26, points 5-9).

Tables (``tables.py``, migration ``git_0001_integrations``): ``svc_git_integrations`` (token and
webhook secret sealed), ``svc_git_oauth_states`` (hashed, single use), ``svc_git_deliveries``
(webhook delivery ids seen, per integration), ``svc_git_pull_requests`` and ``svc_git_ci_runs``
(the cache, with CI logs cut at a size cap).

Modules: ``providers`` (the REST and OAuth parts of GitHub and GitLab used, over kernel.base.outbound),
``bodies``, ``integrations`` (CRUD, rotate-secret, OAuth), ``webhooks`` (the signed receiver),
``pulls`` (cache, refresh, CI runs and logs, validate), ``routes``.

Hooks: register_hookspecs (``gitops_intents``, ``git_ci_failed``: agents answers them, ``hookspecs``),
register_settings, register_error_codes, register_routes.
Audit actions: ``git.integration.create|update|delete|rotate_secret|oauth_connected``,
``git.validate``, ``git_ci_failed``.
"""
