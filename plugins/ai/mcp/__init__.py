"""The MCP server (``mcp``) and its sessions' lifetime (``sessions``, which does not import the server)."""
