"""Pieces every strategy may end with: the whole-image answer and the typed fallback chain."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hydra_vr.agent.checks import Evidence, measured_answer, refused, rewrite
from hydra_vr.agent.roles import fallback_program
from hydra_vr.agent.step import boxes_of, result_dict
from hydra_vr.agent.types import Attempt, StepTrace
from hydra_vr.answer_types import AnswerSpec, best_typed, clean, is_failure_answer
from hydra_vr.llm.wrapper import usage_since, usage_snapshot
from hydra_vr.memory import textualize_step

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent
    from hydra_vr.agent.strategy import Episode


def _run_fallback(ctx: HydraAgent, episode: Episode, task: str, action: str, role: str, depth: int) -> tuple[Any, StepTrace]:
    """Run the fixed fallback program for ``task`` (the episode's last resort) and append its traced step (the
    caller fills in what it decided: guess, boxes, decision)."""
    t = time.perf_counter()
    usage0 = usage_snapshot(ctx.llm)
    code = fallback_program(episode.query, task, last_resort=True)  # type: ignore[arg-type]
    program = ctx.runner.run(code, episode.image_path)
    result = episode.result
    step = StepTrace(
        step=len(result.steps) + 1, action=action, role=role, depth=depth, code=code,
        observation=textualize_step(program, program.calls),
        attempts=[Attempt(code, program.ok, program.error_kind, program.error, fallback=True)], result=result_dict(program),
        llm=usage_since(ctx.llm, usage0), seconds={"total": time.perf_counter() - t})
    result.steps.append(step)
    return program, step


def whole_image_answer(ctx: HydraAgent, episode: Episode, role: str, depth: int = 0) -> None:
    """Last resort: ``simple_query`` of the query on the whole image, traced as a step of its own."""
    spec = episode.spec
    assert spec is not None
    program, step = _run_fallback(ctx, episode, "vqa", "(fallback) ask the whole image", role, depth)
    raw = str(program.final_answer) if program.ok and program.has_final_answer else ""
    # the rewrites a step's answer gets that read the reply alone: "why?" answered in a sentence -> its reason
    raw, _ = rewrite("reason_clause", raw, Evidence(program.calls), episode.frame)
    answer = spec.coerce(raw)
    if answer is None and raw and not is_failure_answer(raw):
        answer = clean(raw)  # the VQA tool's own words: better than no answer at the very end
    episode.result.answer, episode.result.answer_source = answer, "fallback simple_query"
    step.decision, step.guess = "answer", answer


def fallback_box(ctx: HydraAgent, episode: Episode, role: str, depth: int = 0) -> None:
    """Grounding's last resort when a strategy ends without a box: the fallback program (the
    expression's names in turn, the first the detector finds anything for, the expression picking
    among those boxes; for an expression that tells its thing from no other, the region standing out),
    traced as a step of its own. Nothing found: still no box."""
    program, step = _run_fallback(ctx, episode, "grounding", "(fallback) find the expression's names in turn", role, depth)
    # Only a box a tool found (for one of the names, or the region standing out): the whole image is no answer.
    found = any(c.tool in ("find", "standout") and c.result for c in program.calls)
    boxes = boxes_of(program.final_answer) if found and program.ok and program.has_final_answer else []
    result = episode.result
    if boxes:
        result.boxes, result.answer, result.answer_source, result.error = boxes, "1 box", "fallback find", None
    step.boxes, step.decision = boxes, "answer" if boxes else "fail"


def typed_fallback(ctx: HydraAgent, episode: Episode, guesses: list[str], role: str, depth: int = 0,
                   calls: Sequence[Any] | None = None) -> None:
    """The best typed guess of the episode, else the whole-image answer. Where the episode's ``calls`` measured
    the answer (a check's ``measured``: "blurry" where every focus measure of the background said so), guesses a
    check refuses are left out, and the measured answer stands in for none."""
    spec = episode.spec
    assert spec is not None
    frame = episode.frame
    if calls is not None and frame is not None and (measured := measured_answer(frame, calls)) is not None:
        guesses = [g for g in guesses if not refused(frame, g, calls)]
        if best_typed(guesses, spec) is None:
            episode.result.answer, episode.result.answer_source = measured[0], f"measured ({measured[1]})"
            return
    answer = best_typed(guesses, spec)
    if answer is not None:
        episode.result.answer, episode.result.answer_source = answer, "typed guess"
        return
    whole_image_answer(ctx, episode, role, depth)


__all__ = ["AnswerSpec", "fallback_box", "typed_fallback", "whole_image_answer"]
