"""access: roles, policies, permission rules, teams, and the data behind policy evaluation.

Owns ``svc_roles`` (with the built-in ``admin``, ``public`` and ``subscriber`` roles seeded in
every site), ``svc_memberships`` (a user's one role in a site), ``svc_policies``,
``svc_permissions``, ``svc_policy_attachments`` and ``svc_teams``. Implements ``load_access``,
which ``kernel.access`` evaluates and caches; every change emits ``access.changed`` so each
worker drops its cached decisions for the site.

Routes (site required; admin unless noted): ``/roles`` and ``/roles/{id}`` (with
``/permissions``: a role's own policy, one call per rule), ``/policies`` and
``/policies/{id}`` (with ``/permissions``, ``/permissions/{id}``, ``/attach``, ``/detach``),
``/teams`` and ``/teams/{id}`` (the collection paths also take Directus's bulk PATCH and
DELETE), ``/users/subscriber-access`` and ``/users/subscriber-access/{collection}``,
``GET /permissions/me`` and ``POST /permissions/check`` (bearer).

Modules: services ``roles``, ``policies``, ``rules``, ``attachments``, ``teams``, ``subscriber``,
``effective``, ``role_rules`` (no Falcon; they take a ``RequestContext``); ``conditions`` checks rule filter
trees; ``guards`` the invariants (role tree, no admin for the public or subscriber role);
``common`` input checks and ``record_change`` (``access.changed`` plus an audit record);
resources in ``routes_*``; the route table in ``routes``, its OpenAPI schemas in ``schemas``.

``field_grants`` strips a deleted field from the rules of its collection (``fields.delete``);
``collection_grants`` deletes the rules of a deleted collection (``collections.delete``).

Hooks: register_routes, register_event_handlers, load_access, site_created.
Events: ``access.changed`` (action, ``{ siteId }``) after every change to roles, policies,
rules, attachments, teams or team members. Subscribes to ``fields.delete`` and
``collections.delete`` (filter and action).
Audit actions: ``role.*``, ``policy.*``, ``permission.*`` (``permission.update`` when a deleted
field leaves a rule, ``permission.delete`` when a deleted collection takes its rules),
``policy.attach``, ``policy.detach``, ``team.*``.
Other plugins use ``plugins.access.api`` (declare ``requires = ("access",)``); it exports no table
(``members(db)`` is a query of a site's members to join). access requires no plugin: a user id is an
opaque string here, and accounts calls ``forget_user`` when it deletes an identity.
"""
