"""Effective permissions: ``GET /permissions/me`` and the ``POST /permissions/check`` debugger.

Both answer from ``kernel.access`` (the same snapshot, cache and evaluation every request
uses), never from a second implementation that could drift from the real one.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError, Principal
from kernel.policy.access import Decision
from plugins.access.common import check_body, collection_value, ref_id
from plugins.access.guards import user_is_member
from plugins.access.rules.rules import action_value

CHECK_FIELDS = frozenset({"collection", "action", "userId", "explain"})


async def my_permissions(ctx: Any) -> dict[str, Any]:
    """The caller's role chain, teams, policies and per-collection decisions in this site.

    An admin gets ``{"*": {action: allowed}}``: admin access short-circuits every rule.
    """
    site_id = ctx.require_site()
    snap = await ctx.kernel.access.snapshot(ctx.principal, site_id)
    if snap.admin:
        matrix = {"*": {action: Decision(True).to_dict() for action in ctx.kernel.access.actions}}
    else:
        matrix = snap.matrix(ctx.principal)
    return {"admin": snap.admin, "roleId": snap.role_id, "roles": list(snap.role_ids),
            "teams": list(snap.team_ids), "policies": list(snap.policy_ids), "permissions": matrix}


async def check(ctx: Any, body: Any) -> dict[str, Any]:
    """The decision for ``{ collection, action }``: for the caller, or (admins only) for
    ``userId``, a member of the site, as that user's own requests would get it."""
    site_id = ctx.require_site()
    body = check_body(body, CHECK_FIELDS)
    if body.get("collection") is None:
        raise ApiError.validation("'collection' is required", path=["collection"])
    collection = collection_value(body["collection"], wildcard=False)
    action = action_value(ctx, body.get("action"))
    principal = ctx.principal
    if body.get("userId") is not None:
        user_id = ref_id(body["userId"], "userId")
        if user_id != principal.user_id:
            if not principal.is_admin:
                raise ApiError.forbidden("Only an admin may check another user's permissions")
            async with ctx.reader() as db:
                if not await user_is_member(db, user_id):
                    raise ApiError.validation("'userId' must be a member of this site", path=["userId"])
            principal = Principal(kind="user", user_id=user_id, site_id=site_id)
    explain = body.get("explain", False)
    if not isinstance(explain, bool):
        raise ApiError.validation("'explain' must be a boolean", path=["explain"])
    snap = await ctx.kernel.access.snapshot(principal, site_id)
    decision = snap.decide(collection, action, principal)
    out = decision.to_dict()
    if not decision.allowed:
        out["fields"] = []  # a denial grants no field (Decision(False) says "*", meaning unset)
    if explain:
        out["explain"] = explanation(snap, collection, action)
    return out


# -- people: which rules decided (the studio's "effective access", docs/access.md#why-a-check-answers-so)
def explanation(snap: Any, collection: str, action: str) -> dict[str, Any]:
    """What a decision was made of, from the same snapshot: admin access (which short-circuits
    every rule), the role chain, teams and policies, and the rules of ``action`` on
    ``collection`` or ``*`` as they are stored (their conditions before variables are bound).
    No rule listed and no admin access: denied by default."""
    rules = [{"id": r.id, "policyId": r.policy_id, "collection": r.collection, "action": r.action,
              "fields": list(r.fields), "conditions": r.conditions}
             for r in snap.rules if r.action == action and r.collection in (collection, "*")]
    return {"admin": snap.admin, "roleId": snap.role_id, "roles": list(snap.role_ids),
            "teams": list(snap.team_ids), "policies": list(snap.policy_ids),
            "rules": sorted(rules, key=lambda r: (r["policyId"] or "", r["id"] or ""))}
# -- end people
