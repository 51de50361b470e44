"""Skills: procedural memory the agent writes, reads on demand and can be trusted with.

Layout and front matter: :mod:`engine.skills.store`; the content guard and trust levels:
:mod:`engine.skills.guard`; writes and the pending queue: :mod:`engine.skills.manage`; usage
counts: :mod:`engine.skills.usage`; what the agent wires in: :mod:`engine.skills.tools`
(``skill_tools``, ``skills_index``, ``propose_skill_message``); the CLI:
:mod:`engine.skills.cli`.
"""

from __future__ import annotations

from engine.skills.store import SkillError
from engine.skills.tools import propose_skill_message, skill_tools, skills_index

__all__ = ["SkillError", "propose_skill_message", "skill_tools", "skills_index"]
