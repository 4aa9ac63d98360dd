"""Render the API (ImagePatch + helpers) as Python stubs with docstrings for the reasoner prompt.

The prompt is generated from the live objects, so code and prompt cannot drift apart.
"""

from __future__ import annotations

import inspect
import textwrap

from hydra_vr.api.helpers import API_FUNCTIONS
from hydra_vr.api.image_patch import ImagePatch
from hydra_vr.api.operations import patch_methods

# The constructor, then the patch methods of the operation table, in its order.
_PATCH_METHODS = ("__init__", *patch_methods())


def _stub(func: object, indent: str = "") -> str:
    sig = inspect.signature(func)
    # Keyword-only parameters are internal plumbing (parent, label...): keep them out of the prompt.
    sig = sig.replace(parameters=[p for p in sig.parameters.values() if p.kind is not p.KEYWORD_ONLY])
    sig = str(sig).replace("'", "")  # postponed annotations render as strings
    name = getattr(func, "__name__")
    doc = inspect.getdoc(func) or ""
    body = textwrap.indent(f'"""{doc}\n"""\n...', indent + "    ")
    return f"{indent}def {name}{sig}:\n{body}"


def render_api(methods: tuple[str, ...] = _PATCH_METHODS, include_helpers: bool = True) -> str:
    """Python-stub text of the API: the ImagePatch class, then the helper functions."""
    cls_doc = textwrap.indent(f'"""{inspect.getdoc(ImagePatch)}\n"""', "    ")
    parts = [f"class ImagePatch:\n{cls_doc}\n"]
    for m in methods:
        parts.append(_stub(getattr(ImagePatch, m), indent="    ") + "\n")
    if include_helpers:
        parts.extend(_stub(f) + "\n" for f in API_FUNCTIONS)
    return "\n".join(parts)
