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

from hydra_vr.agent.roles import Planner, PromptSet, Reasoner, Summarizer, fallback_program
from hydra_vr.agent.types import Attempt, EpisodeResult, Option, StepTrace, Task
from hydra_vr.answer_types import AnswerSpec, best_typed, clean, expected_type, is_failure_answer
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
    def run(self, image_path: str, query: str, task: Task = "vqa", choices: list[str] | None = None) -> EpisodeResult:
        """Answer ``query`` about the image (task "vqa") or ground it to boxes (task "grounding").

        Every VQA answer is held to the type the query expects (``hydra_vr.answer_types``; the
        dataset's multiple-choice ``choices`` when given): no failure message or ill-typed reply
        becomes the answer while steps remain.
        """
        if task not in ("vqa", "grounding"):
            raise AgentInputError(f"unknown task {task!r}; use 'vqa' or 'grounding'")
        if not query or not query.strip():
            raise AgentInputError("the query is empty")
        load_image(image_path)  # fail early and clearly on a missing or unreadable image
        t0 = time.perf_counter()
        before = _usage_snapshot(self.llm)
        self.runner.reset()
        spec = expected_type(query, choices) if task == "vqa" else None
        result = EpisodeResult(query=query, task=task, image=str(image_path), mode=self.config.mode, answer=None, boxes=[], steps=[],
                               answer_type=spec.kind if spec else "box")
        try:
            if self.config.mode == "vipergpt":
                self._run_vipergpt(result, image_path, query, task, spec)
            else:
                self._run_loop(result, image_path, query, task, spec)
        except Exception as exc:  # an LLM endpoint down, a backend crash: report, don't lose the trace
            log.exception("episode failed")
            result.error = f"{type(exc).__name__}: {exc}"
        result.seconds = time.perf_counter() - t0
        result.llm = _usage_since(self.llm, before)
        return result

    def _run_loop(self, result: EpisodeResult, image_path: str, query: str, task: Task, spec: AnswerSpec | None) -> None:
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
            direct = spec.coerce(direct) if direct and spec is not None else None
            if direct and not options and memory.entries and task == "vqa":
                result.answer, result.answer_source = direct, "planner"
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
            guess, note = typed_guess(program, spec) if spec is not None else (None, None)
            memory.add(MemoryEntry(step, instruction, attempts[-1].code, feedback,
                                   [v.to_dict() for v in program.variables], program.ok, guess, note))
            boxes = _boxes_of(program.final_answer) if program.ok and program.has_final_answer else []
            t = time.perf_counter()
            decision, answer = "continue", None
            if task == "grounding":
                if boxes:
                    decision = "answer"
            elif self.max_steps == 1:
                decision, answer = "answer", guess
            else:
                d = summarizer.decide(query, memory.render(), spec)
                decision, answer = d.kind, d.answer
                if d.note:  # the planner sees why, and proposes something else
                    memory.entries[-1].note = "; ".join(x for x in (memory.entries[-1].note, d.note) if x)
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
                elif answer or guess:
                    result.answer, result.answer_source = (answer, "summarizer") if answer else (guess, "program")
                else:
                    self._final(result, summarizer, image_path, query, memory, spec)
                return
        # Step limit: merge what the steps found.
        if task == "grounding":
            result.boxes = _last_patch_boxes(memory)
            if not result.boxes:
                result.error = f"no box found before {stop_reason}"
        else:
            self._final(result, summarizer, image_path, query, memory, spec)

    def _final(self, result: EpisodeResult, summarizer: Summarizer, image_path: str, query: str, memory: StateMemoryBank,
               spec: AnswerSpec | None) -> None:
        """The answer when the steps gave none that fits: the final-answer role (multi-step modes), then
        the best typed guess, then ``simple_query`` on the whole image."""
        spec = spec or expected_type(query)
        if self.max_steps > 1:
            answer = summarizer.final_answer(query, memory.render(), memory.guesses(), spec)
            if answer is not None:
                result.answer, result.answer_source = answer, "final_answer"
                return
        answer = best_typed(memory.guesses(), spec)
        if answer is not None:
            result.answer, result.answer_source = answer, "typed guess"
            return
        self._whole_image_answer(result, image_path, query, spec)

    def _whole_image_answer(self, result: EpisodeResult, image_path: str, query: str, spec: AnswerSpec) -> None:
        """Last resort: ``simple_query`` of the query on the whole image, traced as a step of its own."""
        t = time.perf_counter()
        usage0 = _usage_snapshot(self.llm)
        code = fallback_program(query, "vqa")
        program = self.runner.run(code, image_path)
        feedback = textualize_step(program, self.toolbox.drain_calls() if self.toolbox is not None else [])
        raw = str(program.final_answer) if program.ok and program.has_final_answer else ""
        answer = spec.coerce(raw)
        if answer is None and raw and not is_failure_answer(raw):
            answer = clean(raw)  # the VQA tool's own words: better than no answer at the very end
        result.answer, result.answer_source = answer, "fallback simple_query"
        result.steps.append(StepTrace(
            step=len(result.steps) + 1, options=[], probabilities=[], choice=-1, replans=0,
            instruction="(fallback) ask the whole image", attempts=[Attempt(code, program.ok, program.error_kind, program.error, fallback=True)],
            result=_result_dict(program), feedback=feedback, decision="answer", guess=answer,
            llm=_usage_since(self.llm, usage0), seconds={"total": time.perf_counter() - t}))

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
            repeat = _repeated_step(code, memory)
            if repeat is not None:  # the same program gives the same result: ask for another one
                error = (f"This program is the same as step {repeat.step}'s, which already ran and gave:\n{repeat.feedback[:300]}\n"
                         "Write a different program for the instruction.")
                attempts.append(Attempt(code, False, "repeat", error))
                continue
            program = self.runner.run(code, image_path)
            attempts.append(Attempt(code, program.ok, program.error_kind, program.error))
            if program.ok:
                return attempts, program
            error = program.feedback()
        code = fallback_program(query, task)
        program = self.runner.run(code, image_path)
        attempts.append(Attempt(code, program.ok, program.error_kind, program.error, fallback=True))
        return attempts, program

    def _run_vipergpt(self, result: EpisodeResult, image_path: str, query: str, task: Task, spec: AnswerSpec | None) -> None:
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
        note = None
        if task == "grounding":
            result.boxes = _boxes_of(program.final_answer) if program.ok and program.has_final_answer else []
        elif spec is not None:
            result.answer, note = typed_guess(program, spec)
            result.answer_source = "program" if result.answer is not None else ""
        if task == "grounding" and not result.boxes:
            result.error = "the program returned no box"
        result.steps.append(StepTrace(step=1, options=[], probabilities=[], choice=-1, replans=0, instruction=query,
                                      attempts=attempts, result=_result_dict(program),
                                      feedback=feedback + (f"\nNote: {note}" if note else ""), decision="answer",
                                      guess=result.answer, llm={}, seconds={"total": time.perf_counter() - t}))
        if task == "vqa" and result.answer is None and spec is not None:
            self._whole_image_answer(result, image_path, query, spec)


def typed_guess(program: Any, spec: AnswerSpec) -> tuple[str | None, str | None]:
    """(the program's answer in ``spec``'s type, None) or (None, why it was refused).

    A failure message from the program's own else-branch ("no bus found"), a patch, an error or a
    reply of the wrong type is never a guess; the note tells the next plan to try another way.
    """
    if not program.ok:
        return None, None  # the error is already in the feedback
    if not program.has_final_answer or program.final_answer is None:
        return None, "the program set no final_answer; try another way to get the answer"
    value = program.final_answer
    if isinstance(value, (dict, list)):
        return None, "final_answer is a patch or a list, not an answer; ask a question about it (simple_query) instead"
    typed = spec.coerce(value)
    if typed is not None:
        return typed, None
    reason = spec.check(value)
    if is_failure_answer(value):
        return None, (f"{reason}; the detector may have no class for that name: try another approach, for example "
                      "simple_query on the whole image")
    return None, reason


def _repeated_step(code: str, memory: StateMemoryBank) -> MemoryEntry | None:
    """The earlier step that ran exactly this program (whitespace aside), if any."""
    key = "\n".join(line.strip() for line in code.strip().splitlines() if line.strip())
    for entry in memory.entries:
        if key and key == "\n".join(line.strip() for line in entry.code.strip().splitlines() if line.strip()):
            return entry
    return None


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
