"""Structured outcomes of one sandboxed program step (what the reasoner and textualizer read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ErrorKind = Literal["syntax", "policy", "timeout", "memory", "runtime", "crash"]
ERROR_KINDS: tuple[str, ...] = ("syntax", "policy", "timeout", "memory", "runtime", "crash")


@dataclass(frozen=True)
class VariableInfo:
    """One variable of the episode namespace, new or changed in the step that reports it.

    ``box`` is set for an ImagePatch, ``boxes`` for a list/tuple of ImagePatch (original-image
    pixels, top-left origin ``[x1, y1, x2, y2]``).
    """

    name: str
    type: str
    repr: str
    box: list[float] | None = None
    boxes: list[list[float]] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "type": self.type, "repr": self.repr}
        if self.box is not None:
            d["box"] = self.box
        if self.boxes is not None:
            d["boxes"] = self.boxes
        return d


@dataclass
class StepTimings:
    """Milliseconds. ``total`` is the parent's wall clock for the step; ``tools`` the time the
    parent spent serving vision calls; ``compile``/``execute``/``report`` are measured in the child."""

    total: float = 0.0
    tools: float = 0.0
    compile: float = 0.0
    execute: float = 0.0
    report: float = 0.0
    spawn: float = 0.0  # waiting for a (re)started child, 0 when one was ready

    @property
    def overhead(self) -> float:
        """Time not spent in the program's own code or in the vision tools."""
        return max(0.0, self.total - self.tools - self.execute)


@dataclass
class ProgramResult:
    """Outcome of one program step.

    ``ok`` with ``final_answer`` (the variable ``final_answer`` if the namespace holds one; patches
    become ``{"type": "ImagePatch", "box": [...], ...}``) and the new or changed ``variables``; or
    ``error_kind`` in :data:`ERROR_KINDS` and a short ``error`` written for the LLM. ``rule`` names
    the broken policy rule and ``line`` the failing program line where they apply.
    ``namespace_lost`` says the child was restarted, so variables of earlier steps are gone.
    """

    ok: bool
    error_kind: ErrorKind | None = None
    error: str | None = None
    final_answer: Any = None
    has_final_answer: bool = False
    variables: list[VariableInfo] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    stdout: str = ""
    tool_calls: int = 0
    calls: list[Any] = field(default_factory=list)  # this step's ToolCallRecords, for the textualizer
    line: int | None = None
    rule: str | None = None
    namespace_lost: bool = False
    timings: StepTimings = field(default_factory=StepTimings)

    def variable(self, name: str) -> VariableInfo | None:
        return next((v for v in self.variables if v.name == name), None)

    def feedback(self) -> str:
        """A short text for the LLM: the error, or the final answer and new variables."""
        if not self.ok:
            return f"{self.error_kind} error: {self.error}"
        lines = [f"{v.name} ({v.type}) = {v.repr}" for v in self.variables]
        if self.has_final_answer:
            lines.append(f"final_answer = {self.final_answer!r}")
        return "\n".join(lines) or "(no new variables)"
