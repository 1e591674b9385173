"""The access plugin's route table with its OpenAPI operations (``plugin.register_routes``)."""

from __future__ import annotations

from typing import Any

from kernel import Route, ops
from plugins.access import schemas as s
from plugins.access.crud import policies, roles, teams
from plugins.access.crud.routes_crud import Crud, ItemResource, ListResource
from plugins.access.permissions.routes_permissions import (
    PermissionsCheckResource,
    PermissionsMeResource,
    SubscriberAccessResource,
    SubscriberGrantResource,
)
from plugins.access.rules.routes_rules import (
    AttachResource,
    DetachResource,
    RoleRulesResource,
    RuleResource,
    RulesResource,
)

ROLES = Crud("role", roles.list_roles, roles.get_role, roles.create_role, roles.update_roles, roles.delete_roles)
POLICIES = Crud("policy", policies.list_policies, policies.get_policy, policies.create_policy,
                policies.update_policies, policies.delete_policies)
TEAMS = Crud("team", teams.list_teams, teams.get_team, teams.create_team, teams.update_teams, teams.delete_teams)


def _paged(operations: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    operations["get"]["parameters"] = list(s.PAGE_PARAMS)
    return operations


def _crud_routes(path: str, param: str, crud: Crud, record: dict[str, Any], create: dict[str, Any],
                 patch: dict[str, Any]) -> list[Route]:
    what = crud.what
    return [
        Route(path, ListResource(crud), auth="admin", openapi=_paged(ops(
            get=(f"List the site's {what} records", None, [record], 200),
            post=(f"Create a {what}", create, record, 201),
            patch=(f"Update several {what} records (Directus bulk form)", s.bulk_patch(patch), [record], 200),
            delete=(f"Delete several {what} records (Directus bulk form)", s.BULK_DELETE, None, 204),
        ))),
        Route(f"{path}/{{{param}}}", ItemResource(crud), auth="admin", openapi=ops(
            get=(f"Get a {what}", None, record, 200),
            patch=(f"Update a {what}", patch, record, 200),
            delete=(f"Delete a {what}", None, None, 204),
        )),
    ]


def access_routes(kernel: Any) -> list[Route]:
    """Roles, policies, rules, attachments, teams, effective permissions, subscriber access."""
    actions = kernel.access.actions
    rule, rule_create, role_rule_create, check = (s.with_actions(schema, actions) for schema in (
        s.RULE, s.RULE_CREATE, s.ROLE_RULE_CREATE, s.CHECK))
    grant_ops = ops(get=("List subscriber read grants", None, [s.GRANT], 200),
                    post=("Grant subscribers read on a collection (200 if already granted)", s.GRANT_BODY,
                          s.GRANT, 201))
    grant_ops["post"]["responses"]["200"] = grant_ops["post"]["responses"]["201"]
    role_rule_ops = ops(
        get=("The rules of a role's own policy (role id, or public, subscriber, admin)", None, [rule], 200),
        post=("Give a role a permission in one call (action defaults to read, fields to all; "
              "200 if the same rule is there)", role_rule_create, rule, 201))
    role_rule_ops["post"]["responses"]["200"] = role_rule_ops["post"]["responses"]["201"]
    return [
        *_crud_routes("/roles", "role_id", ROLES, s.ROLE, s.ROLE_CREATE, s.ROLE_PATCH),
        *_crud_routes("/policies", "policy_id", POLICIES, s.POLICY, s.POLICY_CREATE, s.POLICY_PATCH),
        *_crud_routes("/teams", "team_id", TEAMS, s.TEAM, s.TEAM_CREATE, s.TEAM_PATCH),
        Route("/roles/{role_id}/permissions", RoleRulesResource(), auth="admin", openapi=role_rule_ops),
        Route("/policies/{policy_id}/permissions", RulesResource(), auth="admin", openapi=_paged(ops(
            get=("List a policy's permission rules", None, [rule], 200),
            post=("Add a permission rule to a policy", rule_create, rule, 201)))),
        Route("/policies/{policy_id}/permissions/{permission_id}", RuleResource(), auth="admin", openapi=ops(
            get=("Get a permission rule", None, rule, 200),
            delete=("Delete a permission rule", None, None, 204))),
        Route("/policies/{policy_id}/attach", AttachResource(), auth="admin", openapi=ops(
            post=("Attach a policy to a role, user or team", s.ATTACH, s.ATTACHMENT, 201))),
        Route("/policies/{policy_id}/detach", DetachResource(), auth="admin", openapi=ops(
            post=("Detach a policy from a role, user or team", s.ATTACH, None, 204))),
        Route("/permissions/me", PermissionsMeResource(), auth="bearer", openapi=ops(
            get=("The caller's effective permissions in the site", None, s.EFFECTIVE, 200))),
        Route("/permissions/check", PermissionsCheckResource(), auth="bearer", openapi=ops(
            post=("Evaluate access to a collection and action (userId: admins only)", check, s.EXPLAINED, 200))),
        Route("/users/subscriber-access", SubscriberAccessResource(), auth="admin", openapi=grant_ops),
        Route("/users/subscriber-access/{collection}", SubscriberGrantResource(), auth="admin", openapi=ops(
            delete=("Revoke subscribers' read on a collection", None, None, 204))),
    ]
