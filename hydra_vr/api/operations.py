"""The vision operations, declared once.

One row per operation feeds everything that has to know about it:

- the sandbox: the wire allowlist and arity (:data:`hydra_vr.sandbox.wire.TOOL_OPS`) and the child's
  proxy methods (:class:`hydra_vr.sandbox.proxy.ProxyToolbox`), both derived from the
  ``VisionToolbox`` method's own signature (defaults included);
- the reasoner's API text: the ``ImagePatch`` methods listed for each row, in this order
  (:func:`hydra_vr.api.spec.render_api`);
- the planner's skill list (:func:`skill_text`);
- the textualizer: ``record`` is the name a call is logged under; the textualizer has a line for
  each (tests/test_operations.py checks that every row is covered).

Adding an operation: a ``VisionToolbox`` method, an ``ImagePatch`` method calling it, and a row here.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Operation:
    name: str | None  # the VisionToolbox method (also the sandbox wire op); None for pure-Python patch methods
    methods: tuple[str, ...]  # the ImagePatch methods the reasoner sees for it
    skill: str = ""  # the planner's phrase for it ("" when it is not offered to the planner by itself)
    record: str | None = None  # the name its calls are logged under (default: ``name``)
    recorded: bool = True  # False: a lookup the toolbox does not log (no textualizer line, no tool call in the trace)

    @property
    def record_name(self) -> str | None:
        return self.record or self.name


OPERATIONS: tuple[Operation, ...] = (
    Operation("find", ("find", "exists"), "find objects by name (returns patches with boxes), check existence"),
    Operation("verify_property", ("verify_property",), "verify a property (colour, material, state)"),
    Operation("best_text_match", ("best_text_match",), "choose the best of several descriptions"),
    Operation("simple_query", ("simple_query",), "ask a simple question about a patch"),
    Operation("read_text", ("read_text",), "read text"),
    Operation("depth", ("compute_depth",), "compare positions and depth", record="compute_depth"),
    Operation("focus", ("is_blurry",), "tell whether a patch, the background or the photo is blurry or in focus"),
    Operation(None, ("crop", "overlaps_with")),
    Operation("llm_query", ("llm_query",), "ask a language model for world knowledge"),
    # Used by backends, helpers and strategies rather than by a patch method of their own:
    Operation("classify", ()),
    Operation("colors", ()),
    Operation("best_image_match", ()),  # the helper function best_image_match
    Operation("standout", ()),  # ImagePatch.standout: grounding's fallback program only, not in the prompt
    Operation("caption", ()),
    # A lookup ImagePatch asks of the toolbox itself ("behind the men" asked of a person's patch): it must cross
    # the sandbox like any operation, or the program fails there with an AttributeError.
    Operation("names_label", (), recorded=False),
)


def tool_operations() -> tuple[Operation, ...]:
    """The rows backed by a VisionToolbox method (what the sandbox forwards)."""
    return tuple(op for op in OPERATIONS if op.name is not None)


@cache
def toolbox_signature(name: str) -> inspect.Signature:
    """The signature of ``VisionToolbox.<name>`` without ``self``: arity and defaults of the wire call."""
    from hydra_vr.api.toolbox import VisionToolbox

    sig = inspect.signature(getattr(VisionToolbox, name))
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def arity(name: str) -> int:
    """Positional arguments of operation ``name`` on the wire (the image included, defaults filled)."""
    return len(toolbox_signature(name).parameters)


def patch_methods() -> tuple[str, ...]:
    """The ImagePatch methods of the reasoner's API text, in table order."""
    return tuple(m for op in OPERATIONS for m in op.methods)


def skill_text(extra: str = "") -> str:
    """The planner's skill list: every operation's phrase, then a task's own additions."""
    phrases = [op.skill for op in OPERATIONS if op.skill]
    if extra.strip():
        phrases.append(extra.strip().rstrip("."))
    return ", ".join(phrases) + "."


__all__ = ["OPERATIONS", "Operation", "arity", "patch_methods", "skill_text", "tool_operations", "toolbox_signature"]
