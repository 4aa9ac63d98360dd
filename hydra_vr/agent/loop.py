"""The HYDRA loop: planner -> controller -> reasoner -> sandbox -> textualizer -> memory -> summarizer.

Modes (config ``agent.mode``), for the paper's ablations:
- ``full``: the configured controller (a trained DQN when a checkpoint is given);
- ``no_rl``: the planner's most probable option;
- ``one_step``: no incremental reasoning, a single step then the answer;
- ``no_sampling``: the planner proposes one instruction (N = 1);
- ``vipergpt``: no planner, one program written straight from the query.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any, Protocol

from hydra_vr.agent.roles import Planner, PromptSet, Reasoner, Summarizer, fallback_program, normalize_short_answer
from hydra_vr.agent.types import Attempt, EpisodeResult, Option, StepTrace, Task
from hydra_vr.api.image_patch import load_image
from hydra_vr.config import AgentConfig
from hydra_vr.controller.base import REPLAN, Controller, ControllerState, PlannerProbabilityController
from hydra_vr.llm.base import ChatModel
from hydra_vr.memory import MemoryEntry, StateMemoryBank, textualize_step

log = logging.getLogger(__name__)


class AgentInputError(ValueError):
    """Bad input to the loop (empty query, unreadable image, unknown task)."""


class ProgramRunner(Protocol):
    """What the loop needs from the sandbox: run a step in the episode's namespace, and reset it."""

    def run(self, code: str, image_path: str | None = None) -> Any: ...

    def reset(self) -> None: ...


StepObserver = Callable[[ControllerState, list[Option], int, StepTrace], None]


def _usage_snapshot(llm: Any) -> dict[str, float]:
    usage = getattr(llm, "usage", None)
    return usage.snapshot() if usage is not None else {}


def _usage_since(llm: Any, before: dict[str, float]) -> dict[str, float]:
    usage = getattr(llm, "usage", None)
    return usage.since(before) if usage is not None else {}


def _instruction_key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _drop_repeats(options: list[Option], history: list[str]) -> list[Option]:
    """Options that are not a step already executed, probabilities renormalised.

    The prompt says "never repeat a step"; small planners do anyway, and a repeated program
    gives the same feedback again, so the loop enforces it.
    """
    done = {_instruction_key(h) for h in history}
    kept = [o for o in options if _instruction_key(o.instruction) not in done]
    total = sum(o.probability for o in kept)
    if not kept or total <= 0:
        return kept
    return [Option(o.instruction, o.probability / total) for o in kept]


def _boxes_of(value: Any) -> list[list[float]]:
    """Boxes in a final_answer as the sandbox reports it (a patch dict, or a list of them)."""
    if isinstance(value, dict) and value.get("box") is not None:
        return [list(map(float, value["box"]))]
    if isinstance(value, (list, tuple)):
        return [b for v in value for b in _boxes_of(v)][:1]
    return []


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
    ) -> None:
        self.config = config
        self.llm = llm
        self.toolbox = toolbox
        self.runner = runner
        self.controller = controller or PlannerProbabilityController()
        self.example_set = example_set
        self.observer = observer
        self._roles: dict[Task, tuple[Planner, Reasoner, Summarizer]] = {}

    # ------------------------------------------------------------------ roles
    def roles(self, task: Task) -> tuple[Planner, Reasoner, Summarizer]:
        if task not in self._roles:
            prompts = PromptSet.for_task(task, self.example_set)
            n = 1 if self.config.mode == "no_sampling" else self.config.num_options
            self._roles[task] = (Planner(self.llm, prompts, n=n), Reasoner(self.llm, prompts), Summarizer(self.llm, prompts))
        return self._roles[task]

    @property
    def max_steps(self) -> int:
        return 1 if self.config.mode in ("one_step", "vipergpt") else self.config.max_steps

    # ------------------------------------------------------------------- run
    def run(self, image_path: str, query: str, task: Task = "vqa") -> EpisodeResult:
        """Answer ``query`` about the image (task "vqa") or ground it to boxes (task "grounding")."""
        if task not in ("vqa", "grounding"):
            raise AgentInputError(f"unknown task {task!r}; use 'vqa' or 'grounding'")
        if not query or not query.strip():
            raise AgentInputError("the query is empty")
        load_image(image_path)  # fail early and clearly on a missing or unreadable image
        t0 = time.perf_counter()
        before = _usage_snapshot(self.llm)
        self.runner.reset()
        result = EpisodeResult(query=query, task=task, image=str(image_path), mode=self.config.mode, answer=None, boxes=[], steps=[])
        try:
            if self.config.mode == "vipergpt":
                self._run_vipergpt(result, image_path, query, task)
            else:
                self._run_loop(result, image_path, query, task)
        except Exception as exc:  # an LLM endpoint down, a backend crash: report, don't lose the trace
            log.exception("episode failed")
            result.error = f"{type(exc).__name__}: {exc}"
        result.seconds = time.perf_counter() - t0
        result.llm = _usage_since(self.llm, before)
        return result

    def _run_loop(self, result: EpisodeResult, image_path: str, query: str, task: Task) -> None:
        planner, reasoner, summarizer = self.roles(task)
        memory = StateMemoryBank(query)
        stop_reason = "the step limit"
        for step in range(1, self.max_steps + 1):
            t_step = time.perf_counter()
            usage0 = _usage_snapshot(self.llm)
            state = ControllerState(query=query, memory_text=memory.render(), step=step, max_replans=self.config.max_replans,
                                    history=[e.instruction for e in memory.entries])
            t = time.perf_counter()
            options, choice, replans, direct = self._choose(planner, state)
            t_plan = time.perf_counter() - t
            # The planner may answer from memory; trusted only when it proposes no further step
            # (with options beside it, the summarizer, which just said "continue", is the judge).
            if direct and not options and memory.entries and task == "vqa":
                result.answer = normalize_short_answer(direct)
                result.steps.append(StepTrace(
                    step=step, options=[], probabilities=[], choice=-1, replans=replans, instruction="(the planner answered from memory)",
                    attempts=[], result={}, feedback=f"planner answer: {direct}", decision="answer", guess=result.answer,
                    llm=_usage_since(self.llm, usage0), seconds={"plan": t_plan, "total": time.perf_counter() - t_step}))
                return
            if not options:
                if memory.entries:
                    stop_reason = "the planner had no new step"
                    break  # nothing new to try: merge what the steps found
                raise RuntimeError("the planner produced no usable instruction")
            instruction = options[choice].instruction
            t = time.perf_counter()
            attempts, program = self.execute(reasoner, image_path, query, task, instruction, memory)
            t_exec = time.perf_counter() - t
            feedback = textualize_step(program, self.toolbox.drain_calls() if self.toolbox is not None else [])
            guess = None
            if program.ok and program.has_final_answer and task == "vqa" and not isinstance(program.final_answer, (dict, list)):
                guess = normalize_short_answer(str(program.final_answer))
            memory.add(MemoryEntry(step, instruction, attempts[-1].code, feedback,
                                   [v.to_dict() for v in program.variables], program.ok, guess))
            boxes = _boxes_of(program.final_answer) if program.ok and program.has_final_answer else []
            t = time.perf_counter()
            decision, answer = "continue", None
            if task == "grounding":
                if boxes:
                    decision = "answer"
            elif self.max_steps == 1:
                decision, answer = "answer", guess
            else:
                d = summarizer.decide(query, memory.render())
                decision, answer = d.kind, d.answer
            t_sum = time.perf_counter() - t
            trace = StepTrace(
                step=step, options=options, probabilities=[o.probability for o in options], choice=choice, replans=replans,
                instruction=instruction, attempts=attempts, result=_result_dict(program), feedback=feedback,
                decision=decision, guess=guess, llm=_usage_since(self.llm, usage0),
                seconds={"plan": t_plan, "execute": t_exec, "summarize": t_sum, "total": time.perf_counter() - t_step},
            )
            result.steps.append(trace)
            if self.observer is not None:
                self.observer(state, options, choice, trace)
            if decision == "answer":
                if task == "grounding":
                    result.boxes = boxes
                    result.answer = f"{len(boxes)} box"
                else:
                    result.answer = answer or guess or summarizer.final_answer(query, memory.render(), memory.guesses())
                return
        # Step limit: merge what the steps found.
        if task == "grounding":
            result.boxes = _last_patch_boxes(memory)
            if not result.boxes:
                result.error = f"no box found before {stop_reason}"
        else:
            result.answer = summarizer.final_answer(query, memory.render(), memory.guesses()) if self.max_steps > 1 else (memory.guesses() or [""])[-1]

    def _choose(self, planner: Planner, state: ControllerState) -> tuple[list[Option], int, int, str | None]:
        """Ask the planner, let the controller pick; REPLAN re-asks (bounded), then falls back."""
        replans = 0
        while True:
            plan = planner.propose(state.query, state.memory_text, temperature=0.0 if replans == 0 else 0.7)
            options = _drop_repeats(plan.options, state.history)
            if not options and plan.options and replans < self.config.max_replans:
                replans += 1  # every option was a step already done: ask again, sampling
                continue
            if not options:
                return [], -1, replans, plan.direct_answer
            state.replans = replans
            choice = self.controller.select([o.instruction for o in options], [o.probability for o in options], state)
            if choice == REPLAN and replans < self.config.max_replans:
                replans += 1
                continue
            if choice == REPLAN or not 0 <= choice < len(options):
                choice = max(range(len(options)), key=lambda i: options[i].probability)
            return options, choice, replans, plan.direct_answer

    def execute(self, reasoner: Reasoner, image_path: str, query: str, task: Task, instruction: str,
                memory: StateMemoryBank) -> tuple[list[Attempt], Any]:
        """Write code for ``instruction`` and run it; retry with the error fed back; then a fallback program."""
        attempts: list[Attempt] = []
        code, error = "", ""
        program = None
        for _ in range(self.config.max_code_retries + 1):
            code = reasoner.write(query, instruction, memory.render(), memory.variables_text(), previous_code=code, error=error)
            program = self.runner.run(code, image_path)
            attempts.append(Attempt(code, program.ok, program.error_kind, program.error))
            if program.ok:
                return attempts, program
            error = program.feedback()
        code = fallback_program(query, task)
        program = self.runner.run(code, image_path)
        attempts.append(Attempt(code, program.ok, program.error_kind, program.error, fallback=True))
        return attempts, program

    def _run_vipergpt(self, result: EpisodeResult, image_path: str, query: str, task: Task) -> None:
        _, reasoner, _ = self.roles(task)
        t = time.perf_counter()
        attempts: list[Attempt] = []
        code, error, program = "", "", None
        for _ in range(self.config.max_code_retries + 1):
            code = reasoner.write_whole_program(query, previous_code=code, error=error)
            program = self.runner.run(code, image_path)
            attempts.append(Attempt(code, program.ok, program.error_kind, program.error))
            if program.ok:
                break
            error = program.feedback()
        else:
            code = fallback_program(query, task)
            program = self.runner.run(code, image_path)
            attempts.append(Attempt(code, program.ok, program.error_kind, program.error, fallback=True))
        feedback = textualize_step(program, self.toolbox.drain_calls() if self.toolbox is not None else [])
        if program.ok and program.has_final_answer:
            if task == "grounding":
                result.boxes = _boxes_of(program.final_answer)
            elif not isinstance(program.final_answer, (dict, list)):
                result.answer = normalize_short_answer(str(program.final_answer))
        if task == "grounding" and not result.boxes:
            result.error = "the program returned no box"
        result.steps.append(StepTrace(step=1, options=[], probabilities=[], choice=-1, replans=0, instruction=query,
                                      attempts=attempts, result=_result_dict(program), feedback=feedback, decision="answer",
                                      guess=result.answer, llm={}, seconds={"total": time.perf_counter() - t}))


def _result_dict(program: Any) -> dict[str, Any]:
    return {
        "ok": program.ok, "error_kind": program.error_kind, "error": program.error,
        "final_answer": program.final_answer if program.has_final_answer else None,
        "variables": [v.to_dict() for v in program.variables], "stdout": program.stdout[:2000],
        "tool_calls": program.tool_calls,
    }


def _last_patch_boxes(memory: StateMemoryBank) -> list[list[float]]:
    for entry in reversed(memory.entries):
        for v in reversed(entry.variables):
            if v.get("box") is not None:
                return [v["box"]]
            if v.get("boxes"):
                return [v["boxes"][0]]
    return []
