"""HierVA (Dong et al.): a manager that plans and hands scoped tasks to workers, keeping one line of each.

Loop: plan in two stages (the draft is dropped) -> is there a next task? -> write the task ->
validate it (re-asked with the error, bounded) -> run a worker on one image through the shared step
-> add its distilled one-line summary to the manager's context -> ... -> a typed final answer.
Ablations (options): ``no_hierarchy`` (one agent plans, writes every program and answers, seeing
everything), ``no_distill`` (workers' full traces go to the manager), ``no_scope`` (workers see the
whole image, the question and every earlier step), ``no_skills``.
Peak prompt tokens per role go to ``result.llm["peak_prompt_tokens"]`` (:mod:`hydra_vr.agent.peak_tokens`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from hydra_vr.agent.peak_tokens import PeakTokenRecorder
from hydra_vr.agent.checks import check_answer
from hydra_vr.agent.step import StepOutcome, result_dict
from hydra_vr.agent.strategies.common import fallback_box, typed_fallback
from hydra_vr.agent.strategies.hierva.manager import Manager
from hydra_vr.agent.strategies.hierva.skills import skill_names, skill_text
from hydra_vr.agent.strategies.hierva.task import WorkerTask
from hydra_vr.agent.strategies.hierva.worker import ImageRef, WorkerPrompts, distill, full_trace, patch_of, run_worker
from hydra_vr.agent.strategy import Episode, StrategyOptions
from hydra_vr.agent.types import StepTrace
from hydra_vr.api.image_patch import load_image
from hydra_vr.llm.wrapper import usage_since, usage_snapshot

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent


class HierVAOptions(StrategyOptions):
    max_tasks: int = Field(4, ge=1, le=12)  # workers per episode (the paper sets no limit)
    max_task_retries: int = Field(3, ge=0, le=5)  # re-asks of an invalid task
    no_hierarchy: bool = False
    no_distill: bool = False
    no_scope: bool = False
    no_skills: bool = False


class HierVAStrategy:
    name: ClassVar[str] = "hierva"
    summary: ClassVar[str] = ("HierVA: a manager plans, then hands validated one-image tasks (original or a crop) to scoped "
                              "workers and keeps one distilled line of each; typed final answer")
    Options: ClassVar[type[StrategyOptions]] = HierVAOptions

    def __init__(self, options: HierVAOptions | None = None) -> None:
        self.options = options or HierVAOptions()

    def run(self, ctx: HydraAgent, episode: Episode) -> None:
        recorder = PeakTokenRecorder.install(ctx)
        width, height = load_image(episode.image_path).size
        run = _Run(ctx, episode, self.options, recorder, ImageRef.whole(width, height))
        try:
            if self.options.no_hierarchy:
                run.flat()
            else:
                run.hierarchical()
        finally:  # also in the trace: eval keeps traces, and ask prints the last step's extra
            if episode.result.steps:
                episode.result.steps[-1].extra["peak_prompt_tokens"] = recorder.peaks


class _Run:
    """One episode's state: the manager, the worker prompts, the trace."""

    def __init__(self, ctx: HydraAgent, episode: Episode, options: HierVAOptions, recorder: PeakTokenRecorder, image: ImageRef) -> None:
        self.ctx, self.episode, self.options, self.recorder = ctx, episode, options, recorder
        self.grounding = episode.task == "grounding"
        skills = [] if options.no_skills else skill_names()
        role = "agent" if options.no_hierarchy else "manager"
        self.manager = Manager(recorder.role(role), episode.query, image, grounding=self.grounding, skills=skills,
                               max_tasks=options.max_tasks, max_task_retries=options.max_task_retries)
        self.workers = WorkerPrompts()
        self.guesses: list[str] = []
        self.calls: list[Any] = []  # the workers' vision calls: a final 0 or "no" resting on a blind find() is refused
        self.boxes: list[list[float]] = []  # boxes the workers returned, last is best
        self.history: list[str] = []  # every worker's full trace (what no_scope workers and no_hierarchy see)

    # ---------------------------------------------------------------- helpers
    def _start(self) -> tuple[float, dict[str, float]]:
        return time.perf_counter(), usage_snapshot(self.recorder.inner)  # the inner model: no peaks in step usage

    def _trace(self, t: tuple[float, dict[str, float]], **fields: Any) -> StepTrace:
        step = StepTrace(step=len(self.episode.result.steps) + 1, llm=usage_since(self.recorder.inner, t[1]),
                         seconds={"total": time.perf_counter() - t[0]}, **fields)
        self.episode.result.steps.append(step)
        return step

    def _plan(self, role: str) -> None:
        t = self._start()
        draft = self.manager.make_plan()
        self._trace(t, action="plan (draft, then step list; the draft is dropped)", role=role, decision="plan",
                    extra={"draft": draft, "plan": list(self.manager.plan)})

    # ------------------------------------------------------------ hierarchical
    def hierarchical(self) -> None:
        manager, opts = self.manager, self.options
        self._plan("manager")
        stop = "the task limit"
        for k in range(1, opts.max_tasks + 1):
            t = self._start()
            if k > 1 and not manager.wants_next():
                stop = "the manager had no next task"
                break
            reply = manager.write_task()
            task = reply.task
            extra: dict[str, Any] = {"next": "yes" if k > 1 else "(first task)", "errors": reply.errors}
            if task is None:
                self._trace(t, action=f"task {k}: no valid task after {len(reply.errors)} tries", role="manager", decision="stop",
                            extra={**extra, "replies": reply.replies})
                stop = "no valid task"
                break
            image = manager.images[0] if opts.no_scope else manager.images[task.image_index]
            self._trace(t, action=f"task {k}: {task.instruction}", role="manager", decision="delegate",
                        extra={**extra, "task": task.model_dump(), "image_index": image.index})
            self._work(task, image)
            if self.grounding and task.expected_output == "box" and self.boxes:
                stop = "a worker found the box"
                break
        self._finish(stop)

    def _work(self, task: WorkerTask, image: ImageRef) -> None:
        ctx, episode, opts = self.ctx, self.episode, self.options
        t = self._start()
        skills = "" if opts.no_skills else skill_text(task.skills)
        out = run_worker(self.recorder.role("worker"), self.workers, ctx.runner, episode.image_path, task, image, skills=skills,
                         episode_task=episode.task, frame=episode.frame, max_retries=ctx.config.max_code_retries,
                         question=episode.query if opts.no_scope else "",
                         history="\n\n".join(self.history) if opts.no_scope else "")
        made = self._keep_crop(task, out) if task.expected_output == "image" else None
        self._collect(task, out)
        summary = full_trace(task, image.index, out) if opts.no_distill else distill(task, image.index, out, made)
        self.manager.done.append(summary)
        self.history.append(full_trace(task, image.index, out))
        self._trace(t, action=task.instruction, role="worker", depth=1, code=out.code, observation=out.observation, boxes=out.boxes,
                    decision=task.expected_output, guess=out.guess, attempts=out.attempts, result=result_dict(out.program),
                    extra={"task": task.model_dump(), "image_index": image.index, "summary": summary,
                           "made_image": made.index if made is not None else None})

    def _keep_crop(self, task: WorkerTask, out: StepOutcome) -> ImageRef | None:
        """Bind the worker's patch as ``crop_<worker id>`` in the sandbox: image ``worker id`` from now on."""
        if not out.ok or not out.program.has_final_answer:
            return None
        found = patch_of(out.program.final_answer)
        if found is None:
            return None
        expr, patch = found
        index = task.worker_id
        bound = self.ctx.runner.run(f"crop_{index} = {expr}", self.episode.image_path)
        if not bound.ok:
            return None
        ref = ImageRef.crop(index, patch["box"], patch.get("label"))
        self.manager.images[index] = ref
        return ref

    def _collect(self, task: WorkerTask, out: StepOutcome) -> None:
        self.calls.extend(out.program.calls)
        if out.guess is not None:
            self.guesses.append(out.guess)
        if task.expected_output in ("box", "image") and out.boxes:
            self.boxes.append(out.boxes[0])

    # ------------------------------------------------------------------ flat
    def flat(self) -> None:
        """no_hierarchy: one agent plans, writes a program per plan step seeing everything, and answers."""
        episode, ctx = self.episode, self.ctx
        self._plan("agent")
        agent = self.recorder.role("agent")
        whole = self.manager.images[0]
        for i, step in enumerate(self.manager.plan, start=1):
            t = self._start()
            expected = "box" if self.grounding and i == len(self.manager.plan) else "text"
            task = WorkerTask(worker_id=i, image_index=0, instruction=step, tools=["code"], expected_output=expected)
            out = run_worker(agent, self.workers, ctx.runner, episode.image_path, task, whole, skills="", episode_task=episode.task,
                             frame=episode.frame, max_retries=ctx.config.max_code_retries, question=episode.query,
                             history="\n\n".join(self.history) or "none")
            self._collect(task, out)
            trace = full_trace(task, 0, out)
            self.history.append(trace)
            self.manager.done.append(trace)
            self._trace(t, action=step, role="agent", code=out.code, observation=out.observation, boxes=out.boxes, decision="continue",
                        guess=out.guess, attempts=out.attempts, result=result_dict(out.program), extra={"image_index": 0})
        self._finish("the end of the plan")

    # ----------------------------------------------------------------- final
    def _finish(self, stop: str) -> None:
        episode, result = self.episode, self.episode.result
        role = "agent" if self.options.no_hierarchy else "manager"
        t = self._start()
        if self.grounding:
            result.boxes = self.boxes[-1:]
            if not result.boxes:
                result.error = f"no worker returned a box before {stop}"
            else:
                result.answer = "1 box"
            self._trace(t, action="final: the last box a worker returned", role=role, boxes=result.boxes, decision="answer",
                        extra={"stopped": stop})
            if not result.boxes:
                fallback_box(self.ctx, episode, role=role)
            return
        frame = episode.frame
        assert frame is not None
        reply = self.manager.final_answer(frame.answer)
        blind = check_answer(frame, reply.answer, self.calls) if reply.answer is not None else None
        if blind:
            reply.reasons.append(blind)
            reply.answer = None
        if reply.answer is not None:
            result.answer, result.answer_source = reply.answer, role
        self._trace(t, action="final answer", role=role, decision="answer", guess=reply.answer,
                    observation=f"{role} answer: {reply.raw}" + (f" (refused: {'; '.join(reply.reasons)})" if reply.reasons else ""),
                    extra={"stopped": stop})
        if result.answer is None:  # never a failure string: the workers' typed guesses, then the whole image
            typed_fallback(self.ctx, episode, self.guesses, role=role)


__all__ = ["HierVAOptions", "HierVAStrategy"]
