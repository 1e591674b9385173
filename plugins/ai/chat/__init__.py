"""The copilot's turns: chat, conversations, the command grammar, approvals of dangerous skill calls."""
