"""HYDRA (Ke et al., ECCV 2024): planner -> controller -> reasoner -> sandbox -> textualizer -> memory -> summarizer.

``agent.mode`` selects the paper's ablations: ``full`` (the trained controller), ``no_rl`` (the
planner's most probable option), ``one_step`` (a single step, no incremental reasoning),
``no_sampling`` (the planner proposes one instruction).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from hydra_vr.agent.checks import check_answer
from hydra_vr.agent.roles import Planner, Summarizer, fallback_program
from hydra_vr.agent.step import StepOutcome, covers_image, image_size, result_dict, run_step
from hydra_vr.agent.strategies.common import fallback_box, typed_fallback
from hydra_vr.agent.strategy import Episode, StrategyOptions
from hydra_vr.agent.types import Option, StepTrace
from hydra_vr.api.placement import pick, placement
from hydra_vr.controller.base import REPLAN, ControllerState, PlannerProbabilityController
from hydra_vr.llm.wrapper import usage_since, usage_snapshot
from hydra_vr.memory import MemoryEntry, StateMemoryBank

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent


# The instruction of the option that asks for the whole query in one program (``whole_query``).
WHOLE_QUERY = "Answer the whole question in one program"


class HydraOptions(StrategyOptions):
    """HYDRA's knobs of the paper live in ``agent`` (mode, num_options, max_steps, max_replans) for compatibility.

    ``whole_query``: the probability given to one more option, :data:`WHOLE_QUERY`, beside the planner's (whose
    probabilities are scaled by the rest); 0 leaves the planner's options alone. The planner almost never offers
    the whole question as a step (3 of 51 recorded easy-vqa episodes), so without it neither controller can pick
    what one program (``--strategy vipergpt``) does. Offered until it has run once; written with the one-program
    prompt, and its typed answer (its program's, else its fallback program's, as one program's) ends the episode
    (:func:`answered_whole`). At 0.5 or more mode ``no_rl`` picks it first without asking the planner
    (:func:`picks_whole_regardless`); a controller trained to choose before the first plan is asked "this, or a
    plan?" first (:func:`decides_whole_first`).
    """

    whole_query: float = Field(0.0, ge=0.0, lt=1.0)
    # A grounding episode whose whole-question step (retried, then the expression's names in turn) found no box
    # ends there. On the 35 dev expressions, 9 episodes went on after such a step, 2-6 steps and 83-241 s each;
    # 2 of them found a box later, neither right. False lets the planner's steps go on searching.
    stop_unfound: bool = True


class HydraStrategy:
    name: ClassVar[str] = "hydra"
    summary: ClassVar[str] = ("HYDRA: a planner proposes N instructions, a controller (DQN or planner probability) picks one, "
                              "the reasoner writes code, a summarizer answers or continues")
    Options: ClassVar[type[StrategyOptions]] = HydraOptions

    def __init__(self, options: HydraOptions | None = None) -> None:
        self.options = options or HydraOptions()

    def run(self, ctx: HydraAgent, episode: Episode) -> None:
        # The whole-question option takes one slot, so the planner writes one option fewer.
        reserved = int(holds_whole_slot(self.options.whole_query, ctx.option_slots))
        planner, reasoner, summarizer = ctx.roles(episode.task, reserved=reserved)
        query, task, frame, spec, result = episode.query, episode.task, episode.frame, episode.spec, episode.result
        memory = StateMemoryBank(query)
        calls: list = []  # every vision call of the episode: a 0 or "no" resting on a blind find() is refused
        max_steps = ctx.max_steps
        no_box = "no box found before the step limit"
        for step in range(1, max_steps + 1):
            t_step = time.perf_counter()
            usage0 = usage_snapshot(ctx.llm)
            state = ControllerState(query=query, memory_text=memory.render(), step=step, max_replans=ctx.config.max_replans,
                                    history=[e.instruction for e in memory.entries])
            t = time.perf_counter()
            options, choice, replans, direct = choose(ctx, planner, state, self.options.whole_query)
            t_plan = time.perf_counter() - t
            # The planner may answer from memory; trusted only when it proposes no further step
            # (with options beside it, the summarizer, which just said "continue", is the judge).
            direct = spec.coerce(direct) if direct and spec is not None else None
            if direct and frame is not None and check_answer(frame, direct, calls):
                direct = None
            if direct and not options and memory.entries and task == "vqa":
                result.answer, result.answer_source = direct, "planner"
                result.steps.append(StepTrace(
                    step=step, action="(the planner answered from memory)", role=self.name, observation=f"planner answer: {direct}",
                    decision="answer", guess=direct, llm=usage_since(ctx.llm, usage0),
                    seconds={"plan": t_plan, "total": time.perf_counter() - t_step}, extra={"replans": replans}))
                return
            if not options:
                if memory.entries:
                    no_box = "no box found before the planner had no new step"
                    break  # nothing new to try: merge what the steps found
                raise RuntimeError("the planner produced no usable instruction")
            instruction = options[choice].instruction
            t = time.perf_counter()
            out = execute(ctx, reasoner, episode, instruction, memory)
            calls.extend(out.program.calls)
            t_exec = time.perf_counter() - t
            memory.add(MemoryEntry(step, instruction, out.code, out.observation,
                                   [v.to_dict() for v in out.program.variables], out.ok, out.guess, out.note))
            t = time.perf_counter()
            decision, answer = "continue", None
            if task == "grounding":
                if out.boxes:
                    decision = "answer"
            elif max_steps == 1:
                decision, answer = "answer", out.guess
            elif answered_whole(instruction, out):
                decision = "answer"  # the summarizer would only re-derive what the program answered
            else:
                d = summarizer.decide(query, memory.render(), spec)
                decision, answer = d.kind, d.answer
                blind = check_answer(frame, answer, calls) if answer and frame is not None else None
                if blind:
                    decision, answer = "continue", None
                for note in (d.note, blind):
                    if note:  # the planner sees why, and proposes something else
                        memory.entries[-1].note = "; ".join(x for x in (memory.entries[-1].note, note) if x)
            t_sum = time.perf_counter() - t
            trace = StepTrace(
                step=step, action=instruction, role=self.name, code=out.code, observation=out.observation, boxes=out.boxes,
                decision=decision, guess=out.guess, attempts=out.attempts, result=result_dict(out.program),
                llm=usage_since(ctx.llm, usage0),
                seconds={"plan": t_plan, "execute": t_exec, "summarize": t_sum, "total": time.perf_counter() - t_step},
                extra={"options": options, "choice": choice, "replans": replans, "note": memory.entries[-1].note},
            )
            result.steps.append(trace)
            if ctx.observer is not None:
                ctx.observer(state, options, choice, trace)
            if decision == "answer":
                if task == "grounding":
                    result.boxes = out.boxes
                    result.answer = f"{len(out.boxes)} box"
                elif answer or out.guess:
                    result.answer, result.answer_source = (answer, "summarizer") if answer else (out.guess, "program")
                else:
                    final(ctx, summarizer, episode, memory, calls)
                return
            if task == "grounding" and self.options.stop_unfound and searched_in_vain(instruction, out):
                no_box = "no box found: the whole-question step, retried, and the expression's names in turn found nothing"
                break
        # Step limit, no new step or stop_unfound: merge what the steps found.
        if task == "grounding":
            result.boxes = last_patch_boxes(memory, image_size(episode.image_path), episode.query)
            if not result.boxes:
                result.error = no_box
                fallback_box(ctx, episode, role=self.name)
        else:
            final(ctx, summarizer, episode, memory, calls)


def execute(ctx: HydraAgent, reasoner: object, episode: Episode, instruction: str, memory: StateMemoryBank):  # noqa: ANN201
    """The shared step for one HYDRA instruction (also what the recorder runs for unchosen options).

    :data:`WHOLE_QUERY` is written with the one-program prompt (``--strategy vipergpt``'s), which holds the task's
    own ending and examples of whole questions; the step prompt is written for parts of one."""
    whole = is_whole_query(instruction)
    if whole:
        def write(previous: str, error: str) -> str:
            return reasoner.write_whole_program(episode.query, previous_code=previous, error=error)  # type: ignore[attr-defined]
    else:
        def write(previous: str, error: str) -> str:
            return reasoner.write(episode.query, instruction, memory.render(), memory.variables_text(),  # type: ignore[attr-defined]
                                  previous_code=previous, error=error)
    # A whole-question program that fails runs the fallback program, as one program does (--strategy vipergpt): on
    # the 70 dev questions the loop's further steps after such a program were right on as many of the questions
    # that fallback answered (5 of 12) at a planner, a reasoner and a summarizer call more each; they did not pay.
    # For grounding, a whole-question program without a box has failed too (retried, then the fallback), as for
    # one program: on the 35 dev expressions, 14 such episodes ran up to 6 steps (one 23 minutes long), and
    # only the names' fallback at the step limit, which one program runs at once, ever gave a right box.
    return run_step(
        ctx.runner, episode.image_path, write,
        task=episode.task, frame=episode.frame, max_retries=ctx.config.max_code_retries,
        fallback_code=fallback_program(episode.query, episode.task), earlier=memory.entries,
        needs_box=whole and episode.task == "grounding",
        expression=episode.query if episode.task == "grounding" else None)


def is_whole_query(instruction: str) -> bool:
    return _instruction_key(instruction) == _instruction_key(WHOLE_QUERY)


def searched_in_vain(instruction: str, out: StepOutcome) -> bool:
    """Whether the whole-question step of a grounding episode ended without a box after its names' fallback ran."""
    return is_whole_query(instruction) and not out.boxes and bool(out.attempts) and out.attempts[-1].fallback


def answered_whole(instruction: str, out: StepOutcome) -> bool:
    """Whether a :data:`WHOLE_QUERY` step gave a typed answer no check refused (its program's, else its fallback
    program's: :func:`execute`): the episode's answer, without asking the summarizer, as one program's would be."""
    return is_whole_query(instruction) and out.guess is not None


def final(ctx: HydraAgent, summarizer: Summarizer, episode: Episode, memory: StateMemoryBank, calls: list | None = None) -> None:
    """The answer when the steps gave none that fits: the final-answer role (multi-step modes), then
    the best typed guess, then ``simple_query`` on the whole image."""
    assert episode.frame is not None and episode.spec is not None
    if ctx.max_steps > 1:
        answer = summarizer.final_answer(episode.query, memory.render(), memory.guesses(), episode.spec)
        if answer is not None and not check_answer(episode.frame, answer, calls or []):
            episode.result.answer, episode.result.answer_source = answer, "final_answer"
            return
    typed_fallback(ctx, episode, memory.guesses(), role="hydra", calls=calls or [])


def choose(ctx: HydraAgent, planner: Planner, state: ControllerState,
           whole_query: float = 0.0) -> tuple[list[Option], int, int, str | None]:
    """Ask the planner, let the controller pick; REPLAN re-asks (bounded), then falls back. ``whole_query``: the
    probability of the :data:`WHOLE_QUERY` option (:class:`HydraOptions`)."""
    if picks_whole_regardless(ctx.controller, whole_query, state.history):
        return [Option(WHOLE_QUERY, whole_query)], 0, 0, None
    if decides_whole_first(ctx.controller, whole_query, ctx.option_slots, state):
        # The controller's own choice between the whole question now and a plan (REPLAN = ask the planner).
        if ctx.controller.select([WHOLE_QUERY], [whole_query], whole_first_state(state)) == 0:
            return [Option(WHOLE_QUERY, whole_query)], 0, 0, None
    replans = 0
    while True:
        plan = planner.propose(state.query, state.memory_text, temperature=0.0 if replans == 0 else 0.7)
        options = drop_repeats(with_whole_query(plan.options, whole_query, ctx.option_slots), state.history)
        if not options and plan.options and replans < ctx.config.max_replans:
            replans += 1  # every option was a step already done: ask again, sampling
            continue
        if not options:
            return [], -1, replans, plan.direct_answer
        state.replans = replans
        choice = ctx.controller.select([o.instruction for o in options], [o.probability for o in options], state)
        if choice == REPLAN and replans < ctx.config.max_replans:
            replans += 1
            continue
        if choice == REPLAN or not 0 <= choice < len(options):
            choice = max(range(len(options)), key=lambda i: options[i].probability)
        return options, choice, replans, plan.direct_answer


def picks_whole_regardless(controller: object, share: float, history: list[str]) -> bool:
    """Whether the controller picks :data:`WHOLE_QUERY` whatever the planner proposes, so the planner is not asked
    (a call of 10-20 s on a 2-core CPU): the planner-probability policy (mode ``no_rl``) with ``share`` >= 0.5 (the
    planner's options share the rest; ties go to the whole question, listed first), before it has run. A wrapped
    or learnt controller (the recorder's, the DQN) always sees the planner's options."""
    return type(controller) is PlannerProbabilityController and share >= 0.5 and not whole_has_run(history)


def decides_whole_first(controller: object, share: float, slots: int, state: ControllerState) -> bool:
    """Whether the controller is asked, before the first plan, to pick :data:`WHOLE_QUERY` or a plan: a controller
    trained on that decision (``whole_first``: a DQN checkpoint trained with the replay's whole-first state), at
    step 1, with the whole question offered. A plan is a call of 5-10 s on a 2-core CPU; the controller buys it
    only when it values a planner's step above the whole question."""
    return (bool(getattr(controller, "whole_first", False)) and holds_whole_slot(share, slots) and state.step == 1
            and not whole_has_run(state.history))


def whole_has_run(history: list[str]) -> bool:
    """Whether :data:`WHOLE_QUERY` is among the executed instructions (it is offered until it has run once)."""
    return any(is_whole_query(h) for h in history)


def whole_first_budget(max_replans: int) -> int:
    """The replan budget the whole-first decision shows: REPLAN (ask the planner) is open whatever the loop's budget.
    Used by the live loop (:func:`whole_first_state`) and the replay that trains the decision, so both agree."""
    return max(1, max_replans)


def whole_first_state(state: ControllerState) -> ControllerState:
    """The state of the whole-first decision (the budget of :func:`whole_first_budget`)."""
    return replace(state, replans=0, max_replans=whole_first_budget(state.max_replans))


def holds_whole_slot(share: float, slots: int) -> bool:
    """Whether :data:`WHOLE_QUERY` takes one of a decision's ``slots``: it is offered (``share`` > 0) and is never
    the only option (mode no_sampling's N = 1)."""
    return share > 0 and slots >= 2


def with_whole_query(options: list[Option], share: float, n: int) -> list[Option]:
    """The planner's ``options`` after :data:`WHOLE_QUERY` at probability ``share`` (the planner's scaled to the rest,
    in their order, the least probable dropped to keep ``n``); unchanged when ``share`` is 0, ``n`` is 1 (mode
    no_sampling) or the planner has no option (a planner that answers from memory is not overruled)."""
    if not holds_whole_slot(share, n) or not options:
        return options
    theirs = [o for o in options if not is_whole_query(o.instruction)]
    while len(theirs) > n - 1:
        theirs.remove(min(theirs, key=lambda o: o.probability))
    total = sum(o.probability for o in theirs) or 1.0
    return [Option(WHOLE_QUERY, share), *(Option(o.instruction, (1 - share) * o.probability / total) for o in theirs)]


def _instruction_key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def drop_repeats(options: list[Option], history: list[str]) -> list[Option]:
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


def last_patch_boxes(memory: StateMemoryBank, size: tuple[int, int] | None = None, expression: str = "") -> list[list[float]]:
    """The last patch the steps' programs held; with the image ``size``, never the whole image (every
    program holds ``image_patch``: it grounds nothing, the fallback's names get their turn instead).
    Of a list of patches, the one ``expression`` places ("the bottom left card"), else the first."""
    where = placement(expression)

    def grounds(box: list[float]) -> bool:
        return size is None or not covers_image(box, size)

    for entry in reversed(memory.entries):
        for v in reversed(entry.variables):
            if v.get("box") is not None and grounds(v["box"]):
                return [v["box"]]
            listed = [b for b in (v.get("boxes") or []) if grounds(b)]
            if listed:
                return [listed[pick(listed, where)] if where is not None else listed[0]]
    return []
