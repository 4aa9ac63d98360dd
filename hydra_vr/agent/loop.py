"""The agent: one (image, query) in, an answer or boxes and a trace out, by the configured strategy.

:class:`HydraAgent` owns what every strategy shares (the LLM, the vision toolbox, the sandbox, the
controller, the roles' prompts, the config) and does what every episode needs (input checks, the
expected answer type, timing, LLM usage, turning a crash into an error on the result). The
strategy (``agent.strategy``: hydra, vipergpt, hammr, ...; see :mod:`hydra_vr.agent.strategy`)
does the reasoning. HYDRA's ablations stay in ``agent.mode``: ``full`` (RL controller), ``no_rl``,
``one_step``, ``no_sampling``; ``mode: vipergpt`` is kept as another name for the vipergpt strategy.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from hydra_vr.agent import checks
from hydra_vr.agent.checks import check_names
from hydra_vr.agent.roles import Planner, PromptSet, Reasoner, Summarizer
from hydra_vr.agent.step import ProgramRunner
from hydra_vr.agent.strategy import Episode, build_strategy, check_sections
from hydra_vr.agent.types import EpisodeResult, Option, StepTrace, Task
from hydra_vr.api.image_patch import load_image
from hydra_vr.config import AgentConfig
from hydra_vr.controller.base import Controller, ControllerState, PlannerProbabilityController
from hydra_vr.llm.base import ChatModel
from hydra_vr.llm.wrapper import usage_since, usage_snapshot
from hydra_vr.question.frame import parse

log = logging.getLogger(__name__)


class AgentInputError(ValueError):
    """Bad input to the loop (empty query, unreadable image, unknown task)."""


StepObserver = Callable[[ControllerState, list[Option], int, StepTrace], None]


class HydraAgent:
    def __init__(
        self,
        config: AgentConfig,
        llm: ChatModel,
        toolbox: Any,
        runner: ProgramRunner,
        controller: Controller | None = None,
        example_set: str | None = None,
        observer: StepObserver | None = None,
        strategy: Any = None,
        disabled_checks: Sequence[str] = (),
    ) -> None:
        unknown = sorted(set(disabled_checks) - set(check_names()))
        if unknown:
            raise ValueError(f"answers.disable names unknown checks {unknown}; the checks are {', '.join(check_names())}")
        self.disabled_checks = tuple(disabled_checks)
        self.config = config
        self.llm = llm
        self.toolbox = toolbox
        self.runner = runner
        self.controller = controller or PlannerProbabilityController()
        self.example_set = example_set
        self.observer = observer
        if strategy is None:
            check_sections(dict(config.model_extra or {}))
            strategy = build_strategy(config.strategy_name, config.strategy_options())
        self.strategy = strategy
        self._roles: dict[Task, tuple[PromptSet, Reasoner, Summarizer]] = {}
        self._planners: dict[tuple[Task, int], Planner] = {}

    # ------------------------------------------------------------------ roles
    @property
    def option_slots(self) -> int:
        """How many options a decision offers the controller (``agent.num_options``; 1 in mode no_sampling)."""
        return 1 if self.config.mode == "no_sampling" else self.config.num_options

    def roles(self, task: Task, reserved: int = 0) -> tuple[Planner, Reasoner, Summarizer]:
        """HYDRA's roles for ``task``, built once (their prompt prefixes stay fixed for the KV cache). ``reserved``:
        option slots the strategy fills itself, so the planner is asked for that many fewer (never fewer than 1):
        each option it writes costs about a second of decoding on a 2-core CPU."""
        if task not in self._roles:
            prompts = PromptSet.for_task(task, self.example_set)
            self._roles[task] = (prompts, Reasoner(self.llm, prompts), Summarizer(self.llm, prompts))
        prompts, reasoner, summarizer = self._roles[task]
        n = max(1, self.option_slots - reserved)
        if (task, n) not in self._planners:
            self._planners[(task, n)] = Planner(self.llm, prompts, n=n)
        return self._planners[(task, n)], reasoner, summarizer

    @property
    def max_steps(self) -> int:
        return 1 if self.config.mode in ("one_step", "vipergpt") else self.config.max_steps

    # ------------------------------------------------------------------- run
    def run(self, image_path: str, query: str, task: Task = "vqa", choices: list[str] | None = None) -> EpisodeResult:
        """Answer ``query`` about the image (task "vqa") or ground it to boxes (task "grounding").

        The query is parsed once (:func:`hydra_vr.question.frame.parse`; the dataset's multiple-choice
        ``choices`` win for the answer type) and every role and check reads that frame. Every VQA answer is
        held to the type the query expects: no failure message or ill-typed reply becomes the answer while
        steps remain.
        """
        if task not in ("vqa", "grounding"):
            raise AgentInputError(f"unknown task {task!r}; use 'vqa' or 'grounding'")
        if not query or not query.strip():
            raise AgentInputError("the query is empty")
        load_image(image_path)  # fail early and clearly on a missing or unreadable image
        t0 = time.perf_counter()
        before = usage_snapshot(self.llm)
        self.runner.reset()
        frame = parse(query, choices) if task == "vqa" else None
        spec = frame.answer if frame is not None else None
        result = EpisodeResult(query=query, task=task, image=str(image_path), mode=self.config.mode, answer=None, boxes=[], steps=[],
                               strategy=self.strategy.name, answer_type=spec.kind if spec else "box")
        with checks.collecting() as fired, checks.disabled(self.disabled_checks):
            try:
                self.strategy.run(self, Episode(str(image_path), query, task, frame, result))
            except Exception as exc:  # an LLM endpoint down, a backend crash: report, don't lose the trace
                log.exception("episode failed")
                result.error = f"{type(exc).__name__}: {exc}"
        result.checks = [f.to_dict() for f in fired]
        result.seconds = time.perf_counter() - t0
        # The facade's counters, plus what a strategy added (HierVA's peak prompt tokens per role).
        result.llm = {**result.llm, **usage_since(self.llm, before)}
        return result


__all__ = ["AgentInputError", "HydraAgent", "ProgramRunner", "StepObserver"]
