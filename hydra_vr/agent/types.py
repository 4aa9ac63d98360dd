"""Messages of the reasoning loop: planner options, step traces and the episode result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Task = Literal["vqa", "grounding"]


@dataclass
class Option:
    instruction: str
    probability: float


@dataclass
class PlannerOutput:
    options: list[Option]
    direct_answer: str | None = None  # the planner may answer when the memory already suffices
    raw: str = ""
    parse_notes: list[str] = field(default_factory=list)


@dataclass
class Attempt:
    """One program the reasoner wrote for an instruction, and what running it gave."""

    code: str
    ok: bool
    error_kind: str | None
    error: str | None
    fallback: bool = False


@dataclass
class StepTrace:
    step: int
    options: list[Option]
    probabilities: list[float]
    choice: int
    replans: int
    instruction: str
    attempts: list[Attempt]
    result: dict[str, Any]  # the final attempt's ProgramResult, as a dict
    feedback: str
    decision: str  # "answer" or "continue"
    guess: str | None
    seconds: dict[str, float]
    llm: dict[str, float]  # calls, prompt and completion tokens spent in this step

    @property
    def code(self) -> str:
        return self.attempts[-1].code if self.attempts else ""


@dataclass
class EpisodeResult:
    query: str
    task: Task
    image: str
    mode: str
    answer: str | None
    boxes: list[list[float]]
    steps: list[StepTrace]
    error: str | None = None
    seconds: float = 0.0
    llm: dict[str, float] = field(default_factory=dict)
    answer_type: str = ""  # yesno | choice | number | color | open (VQA), box (grounding)
    answer_source: str = ""  # which role gave the answer: summarizer, program, final_answer, typed guess, fallback

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
