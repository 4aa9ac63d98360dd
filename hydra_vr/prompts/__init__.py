"""Prompt templates (Jinja2 files under templates/) and the one renderer that fills them."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    # StrictUndefined: a variable missing from a prompt is a bug, not an empty string.
    return jinja2.Environment(
        loader=jinja2.PackageLoader("hydra_vr.prompts", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render_prompt(name: str, **variables: Any) -> str:
    """Render ``templates/<name>.j2`` with ``variables``."""
    return _environment().get_template(f"{name}.j2").render(**variables).strip()


def template_names() -> list[str]:
    return sorted(n[:-3] for n in _environment().list_templates() if n.endswith(".j2"))


@lru_cache(maxsize=8)
def load_examples(name: str) -> dict[str, Any]:
    """Few-shot examples and task wording from ``examples/<name>.yaml`` (vqa, okvqa, grounding)."""
    from importlib import resources

    import yaml

    res = resources.files("hydra_vr.prompts").joinpath(f"examples/{name}.yaml")
    if not res.is_file():
        available = sorted(p.name[:-5] for p in resources.files("hydra_vr.prompts").joinpath("examples").iterdir() if p.name.endswith(".yaml"))
        raise ValueError(f"no few-shot example set {name!r}; available: {', '.join(available)}")
    return yaml.safe_load(res.read_text())
