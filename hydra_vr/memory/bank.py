"""The state memory bank: instructions, code, variables and feedback of every step so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class MemoryEntry:
    step: int
    instruction: str
    code: str
    feedback: str
    variables: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = True
    guess: str | None = None
    note: str | None = None  # why this step's answer was refused, so the next plan tries another way


@dataclass
class StateMemoryBank:
    """Kept across the steps of one episode and rendered into the planner/reasoner/summarizer prompts."""

    query: str
    entries: list[MemoryEntry] = field(default_factory=list)
    max_chars: int = 2500  # small models lose the thread on long contexts: keep the newest steps

    def add(self, entry: MemoryEntry) -> None:
        self.entries.append(entry)

    @property
    def variables(self) -> dict[str, dict[str, Any]]:
        """The latest report of each variable still in the sandbox namespace."""
        latest: dict[str, dict[str, Any]] = {}
        for e in self.entries:
            for v in e.variables:
                latest[v["name"]] = v
        return latest

    def guesses(self) -> list[str]:
        return [e.guess for e in self.entries if e.guess]

    def render(self, include_code: bool = False) -> str:
        """Readable text of the steps, newest kept whole when the budget is tight."""
        if not self.entries:
            return "No steps yet."
        blocks = []
        for e in self.entries:
            lines = [f"Step {e.step}: {e.instruction}"]
            if include_code and e.code:
                lines.append("Code:\n" + e.code)
            lines.append("Result:\n" + e.feedback)
            if e.note:
                lines.append("Note: " + e.note)
            blocks.append("\n".join(lines))
        text = "\n\n".join(blocks)
        while len(text) > self.max_chars and len(blocks) > 1:
            blocks.pop(0)
            text = "(earlier steps omitted)\n\n" + "\n\n".join(blocks)
        return text[-self.max_chars :] if len(text) > self.max_chars else text

    def variables_text(self) -> str:
        names = sorted(self.variables)
        return ", ".join(names) if names else "none"
