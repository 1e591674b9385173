"""Falcon resources of ``/agent/...`` (thin: parse, call the module, shape the answer)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.agents.goals import goals, intents, reviewer, writes
from plugins.agents.governance import autonomy, constitution, killswitch


class Goal:
    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await goals.get(request_context(req), id))


class GoalDecompose:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await goals.decompose(request_context(req), id, await read_json(req)), status=201)


class GoalSettle:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await goals.settle(request_context(req), id))


class Autonomy:
    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await autonomy.ledger(request_context(req)))


class Promotions:
    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await autonomy.list_promotions(request_context(req), req.get_param("status")))

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await autonomy.propose(request_context(req), await read_json(req)), status=201)


class PromotionDecide:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await autonomy.decide(request_context(req), id, await read_json(req)))


class Staged:
    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req, default_limit=25, max_limit=200)
        data, total = await writes.list_staged(request_context(req), req.get_param("status"), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class StagedOne:
    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await writes.get_staged(request_context(req), id))


class StagedVeto:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        body = await read_json(req, required=False) or {}
        send_data(resp, await writes.veto(request_context(req), id, body))


class StagedApply:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await writes.accept(request_context(req), id))


class IncidentResolve:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        body = await read_json(req, required=False) or {}
        send_data(resp, await autonomy.resolve_incident(request_context(req), id, body))


class AgentDecide:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await reviewer.agent_decide(request_context(req), id, await read_json(req)))


class Constitution:
    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await constitution.list_versions(request_context(req)))

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await constitution.draft(request_context(req), await read_json(req)), status=201)


class ConstitutionCompile:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await constitution.compile_version(request_context(req), await read_json(req)))


class ConstitutionCompileOne:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        body = await read_json(req, required=False) or {}
        send_data(resp, await constitution.compile_version(request_context(req), body, id))


class ConstitutionDryRun:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await constitution.dry_run(request_context(req), id))


class ConstitutionActivate:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await constitution.activate(request_context(req), id))


class KillSwitch:
    async def on_get(self, req: Any, resp: Any) -> None:
        every = req.get_param("all") in ("1", "true")
        send_data(resp, await killswitch.list_freezes(request_context(req), every))

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await killswitch.freeze(request_context(req), await read_json(req)), status=201)


class KillSwitchLift:
    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await killswitch.lift(request_context(req), await read_json(req)))


class IntentAction:
    def __init__(self, status: str) -> None:
        self.status = status

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await intents.set_status(request_context(req), id, self.status))
