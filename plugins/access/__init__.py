"""access: roles, policies, permission rules, teams, and the data behind policy evaluation.

Owns ``svc_roles`` (with the built-in ``admin``, ``public`` and ``subscriber`` roles seeded in
every site), ``svc_memberships`` (a user's one role in a site), ``svc_policies``,
``svc_permissions``, ``svc_policy_attachments`` and ``svc_teams``. Implements ``load_access``,
which ``kernel.access`` evaluates and caches; every change emits ``access.changed`` so each
worker drops its cached decisions for the site.

Hooks: register_migrations, register_routes, load_access, site_created.
Other plugins use ``plugins.access.api`` (declare ``requires = ("access",)``).
"""
