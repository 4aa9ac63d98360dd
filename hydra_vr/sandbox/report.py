"""Child side: turn namespace values and exceptions into short plain data for the parent.

Everything here produces str/number/list/dict only (the parent refuses anything else) and caps
sizes, so a program cannot flood the parent or the LLM prompt.
"""

from __future__ import annotations

import math
import reprlib
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Any

from hydra_vr.api.image_patch import ImagePatch, Patches
from hydra_vr.sandbox.policy import PROGRAM_FILENAME
from hydra_vr.sandbox.proxy import ToolError

MAX_REPR_CHARS = 200
MAX_ERROR_CHARS = 400
MAX_ANSWER_CHARS = 10_000
MAX_ITEMS = 50
MAX_VARIABLES = 100

_repr = reprlib.Repr()
_repr.maxstring = MAX_REPR_CHARS
_repr.maxother = MAX_REPR_CHARS
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxdict = 10
_repr.maxlevel = 3


def short_repr(value: Any) -> str:
    try:
        text = _repr.repr(value)
    except Exception as exc:  # a repr that fails must not fail the step
        text = f"<{type(value).__name__}: repr failed with {type(exc).__name__}>"
    return text if len(text) <= MAX_REPR_CHARS else text[: MAX_REPR_CHARS - 3] + "..."


def is_reported(value: Any) -> bool:
    """Data variables only: functions and modules are program plumbing, not findings."""
    return not isinstance(value, (FunctionType, BuiltinFunctionType, ModuleType, type))


def describe(name: str, value: Any) -> dict[str, Any]:
    """A VariableInfo as a dict: name, type, short repr, and boxes of patches."""
    # a simple_query Reply is text to the reader, find's Patches a list
    kind = "str" if isinstance(value, str) else "list" if isinstance(value, Patches) else type(value).__name__
    info: dict[str, Any] = {"name": name, "type": kind, "repr": short_repr(value)}
    if isinstance(value, ImagePatch):
        info["type"] = "ImagePatch"
        info["box"] = value.box
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, ImagePatch) for v in value[:MAX_ITEMS]):
        info["type"] = f"{kind}[ImagePatch]"
        info["boxes"] = [v.box for v in value[:MAX_ITEMS]]
    return info


def fingerprint(value: Any) -> tuple[int, str]:
    """What 'changed' means between steps: another object, or a different short repr."""
    return (id(value), short_repr(value))


def to_plain(value: Any, depth: int = 0) -> Any:
    """A JSON-like copy of ``value`` for ``final_answer``; patches become dicts with their box."""
    if value is None or isinstance(value, (bool, int)):
        return value if not isinstance(value, int) or abs(value) < 10**300 else short_repr(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):  # str(): a subclass (api.types.Reply) would not pass the wire's plain-data check
        return str(value) if len(value) <= MAX_ANSWER_CHARS else value[:MAX_ANSWER_CHARS] + "..."
    if isinstance(value, ImagePatch):
        return {"type": "ImagePatch", "box": value.box, "label": value.label,
                "score": None if value.score is None else float(value.score)}
    if depth >= 4:
        return short_repr(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_plain(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
    if isinstance(value, dict):
        return {str(k)[:100]: to_plain(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
    return short_repr(value)


def exception_line(exc: BaseException) -> int | None:
    """The innermost line of the program on the exception's traceback."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == PROGRAM_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def describe_exception(exc: BaseException, source_lines: list[str]) -> tuple[str, int | None]:
    """``line N: <source line>\\nType: message``, capped for the LLM."""
    name = exc.remote_type if isinstance(exc, ToolError) else type(exc).__name__
    try:
        message = str(exc)
    except Exception:
        message = "<message unavailable>"
    if len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + "..."
    text = f"{name}: {message}" if message else name
    line = exception_line(exc)
    if line is not None and 0 < line <= len(source_lines):
        return f"line {line}: {source_lines[line - 1].strip()[:200]}\n{text}", line
    return text, line
