"""HierVA skills: short markdown procedures (hydra_vr/prompts/skills/*.md), chosen by name.

The manager sees only the names; a worker gets the text of the skills its task names.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def load_skills() -> dict[str, str]:
    """{name: markdown text} of every packaged skill, the name being the file's stem."""
    folder = resources.files("hydra_vr.prompts").joinpath("skills")
    return {p.name[:-3]: p.read_text().strip() for p in sorted(folder.iterdir(), key=lambda p: p.name) if p.name.endswith(".md")}


def skill_names() -> list[str]:
    return list(load_skills())


def skill_text(names: list[str]) -> str:
    """The text of ``names`` (validated elsewhere), joined for a worker's prompt."""
    skills = load_skills()
    return "\n\n".join(skills[n] for n in names)


__all__ = ["load_skills", "skill_names", "skill_text"]
