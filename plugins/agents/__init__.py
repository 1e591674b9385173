"""The agent API (docs/agents.md; docs/decisions/agents.md is the model).

Owns ``/agent/goals``, ``/agent/roles``, ``/agent/autonomy``, ``/agent/staged``,
``/agent/approvals/:id/agent-decide``, ``/agent/constitution``, ``/agent/kill-switch`` and
``/agent/intents``; tables ``svc_agent_*``; jobs ``agents.run``, ``agents.apply_staging`` and the
periodic ``agents.stagings`` and ``agents.intents``; the setting key
``agents.staging_window_seconds``. Every agent write goes through the items API with cause
``agent:<goal id>``. MCP lives in the ai plugin. It answers the git plugin's hooks
``gitops_intents`` (its intents, for GitOps) and ``git_ci_failed`` (an incident) without requiring git.
"""
