"""ai: the copilot (skills, chat, human approvals, conversations) and the MCP server.

Tables: ``svc_ai_conversations``, ``svc_ai_messages``, ``svc_ai_approvals``,
``svc_ai_mcp_sessions`` (``tables.py``, migration ``ai_0001_ai``).
Routes (``routes.py``, ``mcp.py``): ``POST /ai/chat``; ``GET /ai/skills``; ``GET /ai/approvals``;
``POST /ai/approvals/:id/decide``; ``GET /ai/conversations``; ``GET /ai/conversations/:id/messages``;
``DELETE /ai/conversations/:id``; ``POST, DELETE /mcp`` (unless ``SVC_MCP_ENABLED=false``).

Modules: ``api`` (``Skill``, ``SkillContext``, for extensions), ``hookspecs``
(``register_ai_skills``), ``registry``, ``skills`` (the built-ins, registered through the hook),
``gate`` (schema and capability checks every call passes), ``grammar`` (the offline command
grammar), ``provider`` (OpenAI-compatible chat completions), ``chat``, ``approvals``,
``conversations``, ``mcp`` (the MCP server on the official SDK), ``routes``, ``schemas``.

Hooks: register_hookspecs (``register_ai_skills``; files and releases add theirs through it),
register_ai_skills (the built-ins),
register_settings, register_setting_keys (``ai.approvers``),
register_error_codes, register_rate_limits (``ai``), register_routes, register_jobs
(``ai.retention``), startup, shutdown. Audit actions: ``ai.approval.request|approve|reject``.
"""
