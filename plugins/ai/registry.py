"""The skills registry: what every plugin returned from ``register_ai_skills``."""

from __future__ import annotations

from typing import Any

from plugins.ai.api import Skill

STATE_KEY = "ai.skills"


def collect(kernel: Any) -> dict[str, Skill]:
    """Call the hook and index the skills by name; ValueError on a duplicate, TypeError on a stranger."""
    found: dict[str, Skill] = {}
    owners: dict[str, str] = {}
    for impl in kernel.pm.hook.register_ai_skills.get_hookimpls():
        for skill in impl.function(kernel=kernel) or ():
            if not isinstance(skill, Skill):
                raise TypeError(f"register_ai_skills of {impl.plugin_name} must return Skill objects, got {skill!r}")
            if skill.name in found:
                raise ValueError(f"ai skill {skill.name!r} is registered by both {owners[skill.name]} and "
                                 f"{impl.plugin_name}")
            found[skill.name] = skill
            owners[skill.name] = impl.plugin_name
    return found


def skills(kernel: Any) -> dict[str, Skill]:
    """The registered skills: collected again whenever the hook's implementations change (an
    extension loaded or unloaded), else from this process's cache."""
    impls = tuple((impl.plugin_name, id(impl.function)) for impl in
                  kernel.pm.hook.register_ai_skills.get_hookimpls())
    cached = kernel.state.get(STATE_KEY)
    if cached is None or cached[0] != impls:
        cached = kernel.state[STATE_KEY] = (impls, collect(kernel))
    return cached[1]
