"""accounts: who people are and how they prove it.

Owns the global identity table (``svc_users``), the instance admin bootstrapped on first start,
``POST /auth/login`` and ``GET /auth/me``, and the internal-JWT step of the ``authenticate``
chain (it runs last, after API keys and trusted external issuers).

Hooks: register_migrations, register_routes, register_error_codes, authenticate, startup.
Events: emits ``auth.login`` (action) after a successful login.
"""
