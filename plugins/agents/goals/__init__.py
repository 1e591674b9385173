"""Goals and what runs them: the runner, the write path and staging, the agent reviewer, content intents."""
