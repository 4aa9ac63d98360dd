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
    """One step of any strategy: the fields every strategy has, and its own in ``extra``.

    ``role`` says who acted (``hydra``, ``vipergpt``, ``dispatcher``, ``agent:counting``, ...),
    ``depth`` how deep in a hierarchy (HAMMR agents called as tools, HierVA workers), ``action`` what
    was done (an instruction, an Act line, a tool call). HYDRA keeps its planner round in ``extra``:
    ``options`` (instruction, probability), ``choice`` and ``replans``.
    """

    step: int
    action: str
    role: str = "step"
    depth: int = 0
    code: str = ""
    observation: str = ""
    boxes: list[list[float]] = field(default_factory=list)
    decision: str = ""  # "answer", "continue", or a strategy's own word
    guess: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)  # the final attempt's ProgramResult, as a dict
    llm: dict[str, float] = field(default_factory=dict)  # calls, prompt and completion tokens in this step
    seconds: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    # Read-only names kept for HYDRA's readers (recorder, CLI) and old traces.
    @property
    def instruction(self) -> str:
        return self.action

    @property
    def feedback(self) -> str:
        return self.observation

    @property
    def options(self) -> list[Option]:
        return [o if isinstance(o, Option) else Option(**o) for o in self.extra.get("options", [])]

    @property
    def probabilities(self) -> list[float]:
        return [o.probability for o in self.options]

    @property
    def choice(self) -> int:
        return int(self.extra.get("choice", -1))

    @property
    def replans(self) -> int:
        return int(self.extra.get("replans", 0))


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
    strategy: str = "hydra"
    answer_type: str = ""  # yesno | choice | number | color | open (VQA), box (grounding)
    answer_source: str = ""  # which role gave the answer: summarizer, program, final_answer, typed guess, fallback
    checks: list[dict[str, str]] = field(default_factory=list)  # the answer checks that refused an answer, in order

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
