"""ViperGPT (Suris et al., 2023): one program straight from the query, no planner, no memory."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from hydra_vr.agent.roles import fallback_program
from hydra_vr.agent.step import result_dict, run_step
from hydra_vr.agent.strategies.common import whole_image_answer
from hydra_vr.agent.strategy import Episode, StrategyOptions
from hydra_vr.agent.types import StepTrace
from hydra_vr.llm.wrapper import usage_since, usage_snapshot

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent


class ViperGPTOptions(StrategyOptions):
    pass


class ViperGPTStrategy:
    name: ClassVar[str] = "vipergpt"
    summary: ClassVar[str] = "ViperGPT: the reasoner writes one program for the whole query; no planner, no memory"
    Options: ClassVar[type[StrategyOptions]] = ViperGPTOptions

    def __init__(self, options: ViperGPTOptions | None = None) -> None:
        self.options = options or ViperGPTOptions()

    def run(self, ctx: HydraAgent, episode: Episode) -> None:
        _, reasoner, _ = ctx.roles(episode.task)
        t = time.perf_counter()
        usage0 = usage_snapshot(ctx.llm)
        out = run_step(ctx.runner, episode.image_path,
                       lambda previous, error: reasoner.write_whole_program(episode.query, previous_code=previous, error=error),
                       task=episode.task, frame=episode.frame, max_retries=ctx.config.max_code_retries,
                       fallback_code=fallback_program(episode.query, episode.task, last_resort=True), needs_box=episode.task == "grounding",
                       expression=episode.query if episode.task == "grounding" else None)
        result = episode.result
        if episode.task == "grounding":
            result.boxes = out.boxes
            if not result.boxes:
                result.error = "the program returned no box"
        else:
            result.answer = out.guess
            result.answer_source = "program" if out.guess is not None else ""
        result.steps.append(StepTrace(
            step=1, action=episode.query, role=self.name, code=out.code,
            observation=out.observation + (f"\nNote: {out.note}" if out.note else ""), boxes=out.boxes, decision="answer",
            guess=out.guess, attempts=out.attempts, result=result_dict(out.program), llm=usage_since(ctx.llm, usage0),
            seconds={"total": time.perf_counter() - t}))
        if episode.task == "vqa" and result.answer is None:
            whole_image_answer(ctx, episode, role=self.name)
