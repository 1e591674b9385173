"""Falcon resources under a policy: its permission rules, attach and detach."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.access.common import path_id
from plugins.access.crud import attachments
from plugins.access.rules import role_rules, rules


class RulesResource:
    """``/policies/{policy_id}/permissions``: GET a page of rules, POST a rule."""

    async def on_get(self, req: Any, resp: Any, policy_id: str) -> None:
        limit, offset = pagination(req, default_limit=100)
        data, total = await rules.list_rules(request_context(req), path_id(policy_id, "policy"), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any, policy_id: str) -> None:
        policy_id = path_id(policy_id, "policy")
        body = await read_json(req)
        send_data(resp, await rules.create_rule(request_context(req), policy_id, body), status=201)


class RoleRulesResource:
    """``/roles/{role_id}/permissions`` (a role id or ``public``, ``subscriber``, ``admin``): GET the
    rules of the role's own policy, POST one rule into it (201 new, 200 already there)."""

    async def on_get(self, req: Any, resp: Any, role_id: str) -> None:
        send_data(resp, await role_rules.list_rules(request_context(req), _role_ref(role_id)))

    async def on_post(self, req: Any, resp: Any, role_id: str) -> None:
        ref = _role_ref(role_id)
        body = await read_json(req)
        record, created = await role_rules.add_rule(request_context(req), ref, body)
        send_data(resp, record, status=201 if created else 200)


def _role_ref(value: str) -> str:
    return value if value in role_rules.BUILT_IN else path_id(value, "role")


class RuleResource:
    """``/policies/{policy_id}/permissions/{permission_id}``: GET, DELETE."""

    async def on_get(self, req: Any, resp: Any, policy_id: str, permission_id: str) -> None:
        data = await rules.get_rule(request_context(req), path_id(policy_id, "policy"),
                                    path_id(permission_id, "permission rule"))
        send_data(resp, data)

    async def on_delete(self, req: Any, resp: Any, policy_id: str, permission_id: str) -> None:
        await rules.delete_rule(request_context(req), path_id(policy_id, "policy"),
                                path_id(permission_id, "permission rule"))
        send_no_content(resp)


class AttachResource:
    """``POST /policies/{policy_id}/attach`` with one of ``roleId``, ``userId``, ``teamId``."""

    async def on_post(self, req: Any, resp: Any, policy_id: str) -> None:
        policy_id = path_id(policy_id, "policy")
        body = await read_json(req)
        send_data(resp, await attachments.attach(request_context(req), policy_id, body), status=201)


class DetachResource:
    """``POST /policies/{policy_id}/detach`` with the same body as attach; 204."""

    async def on_post(self, req: Any, resp: Any, policy_id: str) -> None:
        policy_id = path_id(policy_id, "policy")
        body = await read_json(req)
        await attachments.detach(request_context(req), policy_id, body)
        send_no_content(resp)
