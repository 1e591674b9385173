"""accounts: who people are and how they prove it.

Owns the global identity table (``svc_users``), the instance admin bootstrapped on first start,
sessions (rotating refresh tokens in families, stored hashed), one-time tokens (verify email,
reset password, invite), API keys (``svk_``, stored hashed), trusted external issuers and the
identities they provision.

Routes: ``/auth/*`` (login, refresh, logout, me, self-service), ``/me/*`` (change-password,
sessions), ``/users`` admin, invites, impersonation, ``/users/{id}/sessions``, ``/sessions/{id}``,
``/api-keys``, ``/admin/auth/issuers``.

The ``authenticate`` chain: API keys (``tryfirst``), trusted external issuers' JWTs (JWKS
verified, fail-closed once an issuer matches), then the internal JWT (``trylast``).

Commands: ``svc users create`` and ``svc users set-password`` (commands.py).

Hooks: register_routes, register_settings, register_error_codes,
register_commands, authenticate, startup, site_deleted, register_hookspecs (publishes ``compose_account_email``:
a plugin may give a site its own verification, reset or invitation email; the email plugin
answers from the site's templates, else the built-in text of ``emails.py`` goes out).
Requires: access (memberships and roles, via its api.py).
Audit actions: auth.login, auth.login_failed, auth.refresh_reuse, auth.logout,
user.created (svc users create), user.password_changed, session.revoked, user.impersonate, api_key.create, api_key.delete,
issuer.create|update|delete, user.provisioned, external_identity.linked, membership.synced.
Events: emits ``auth.login`` (action) after a successful login.
"""
