"""The skills registry: what every plugin returned from ``register_ai_skills``."""

from __future__ import annotations

from typing import Any

from kernel.hooks.plugins import registrations
from plugins.ai.skill import Skill


def skills(kernel: Any) -> dict[str, Skill]:
    """The registered skills by name: collected again whenever the hook's implementations change
    (an extension loaded or unloaded), else from this process's cache."""
    return registrations(kernel, "register_ai_skills", Skill, "name", "ai skill")
