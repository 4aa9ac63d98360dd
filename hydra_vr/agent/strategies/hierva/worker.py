"""A HierVA worker: one instruction on one image, through the shared step, in a private context.

The worker's prompt holds its instruction, the known facts, the text of its task's skills and a
line naming its one image; nothing of the question, the plan or other workers (unless the
``no_scope`` ablation passes ``history``). Its program runs in the episode's sandbox with
``image_patch`` bound to that image: the whole image (index 0) or the crop an earlier worker made
(index k, the sandbox variable ``crop_k``), so zooms chain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hydra_vr.agent.parsing import extract_code
from hydra_vr.agent.step import ProgramRunner, StepOutcome, run_step
from hydra_vr.agent.strategies.hierva.task import WorkerTask
from hydra_vr.agent.types import Task
from hydra_vr.answer_types import clean
from hydra_vr.api.spec import render_api
from hydra_vr.llm.base import ChatMessage, ChatModel
from hydra_vr.memory.textualizer import textualize_call
from hydra_vr.prompts import load_examples, render_prompt
from hydra_vr.question.frame import QuestionFrame

_WHOLE_IMAGE_PATCH = re.compile(r"ImagePatch\(\s*image\s*\)")
MAX_SUMMARY_CHARS = 160


@dataclass(frozen=True)
class ImageRef:
    """One image a worker may be given: index 0 is the original, index k the crop worker k made."""

    index: int
    line: str  # how prompts name it
    variable: str = ""  # the sandbox variable holding the patch ("" for the whole image)
    box: list[float] | None = None
    label: str | None = None

    @classmethod
    def whole(cls, width: int, height: int) -> ImageRef:
        return cls(0, f"image 0: the whole image, {width} x {height} pixels")

    @classmethod
    def crop(cls, index: int, box: list[float], label: str | None) -> ImageRef:
        b = [round(v) for v in box]
        what = f" ({label})" if label else ""
        return cls(index, f"image {index}: a crop made by worker {index}, box {b}{what}, {b[2] - b[0]} x {b[3] - b[1]} pixels",
                   f"crop_{index}", list(box), label)


def scope_code(code: str, image: ImageRef) -> str:
    """The program as it runs: ``image_patch`` bound to the worker's one image.

    ``final_answer`` is cleared first (the namespace outlives a step, and an earlier worker's answer
    must not pass for this one's); on a crop, ``ImagePatch(image)`` is rewritten to the crop, since
    small models open the whole image out of habit.
    """
    if image.index == 0:
        return f"final_answer = None\nimage_patch = ImagePatch(image)\n{code}"
    return f"final_answer = None\nimage_patch = {image.variable}\n{_WHOLE_IMAGE_PATCH.sub('image_patch', code)}"


def unscoped(code: str) -> str:
    """The worker's own lines (what it wrote), for a retry prompt."""
    lines = code.splitlines()
    return "\n".join(lines[2:]) if len(lines) >= 2 and lines[0] == "final_answer = None" else code


class WorkerPrompts:
    """The workers' stable prefix (system prompt with the API, few-shot turns) and their user turn."""

    def __init__(self) -> None:
        shots = []
        for ex in load_examples("hierva").get("worker", []):
            shots += [ChatMessage("user", self.user(image=ex["image"], facts=ex["facts"], instruction=ex["instruction"],
                                                    expected=ex["expected"])),
                      ChatMessage("assistant", f"```python\n{ex['code'].strip()}\n```")]
        self.prefix = [ChatMessage("system", render_prompt("hierva_worker_system", api=render_api())), *shots]

    @staticmethod
    def user(*, image: str, facts: str, instruction: str, expected: str, skills: str = "", question: str = "", history: str = "",
             previous_code: str = "", error: str = "") -> str:
        return render_prompt("hierva_worker_user", image=image, facts=facts, instruction=instruction, expected=expected, skills=skills,
                             question=question, history=history, previous_code=previous_code, error=error)


def run_worker(
    llm: ChatModel,
    prompts: WorkerPrompts,
    runner: ProgramRunner,
    image_path: str,
    task: WorkerTask,
    image: ImageRef,
    *,
    skills: str,
    episode_task: Task,
    frame: QuestionFrame | None,
    max_retries: int,
    question: str = "",
    history: str = "",
    max_tokens: int = 360,
) -> StepOutcome:
    """Write and run the worker's program on its image through :func:`run_step`."""
    facts = "; ".join(f for f in task.known_facts if f.strip()) or "none"

    def write(previous: str, error: str) -> str:
        user = prompts.user(image=image.line, facts=facts, instruction=task.instruction, expected=task.expected_output, skills=skills,
                            question=question, history=history, previous_code=unscoped(previous), error=error)
        res = llm.chat([*prompts.prefix, ChatMessage("user", user)], max_tokens=max_tokens)
        return scope_code(extract_code(res.text), image)

    return run_step(runner, image_path, write, task=episode_task, frame=frame, max_retries=max_retries,
                    fallback_code=fallback_code(task, image, question))


def fallback_code(task: WorkerTask, image: ImageRef, question: str) -> str | None:
    """A fixed program for when every written one failed: ask the patch (text), take the named object (box)."""
    if task.expected_output == "text":
        return scope_code(f"final_answer = image_patch.simple_query({task.instruction!r})", image)
    if task.expected_output == "box":
        nouns = re.findall(r"[a-z]+", (question or task.instruction).lower())
        name = nouns[-1] if nouns else "object"
        return scope_code(f"found = image_patch.find({name!r})\nfinal_answer = found[0] if found else image_patch", image)
    return None  # no fixed crop is better than none: the manager is told no crop was made


def patch_of(value: Any) -> tuple[str, dict[str, Any]] | None:
    """(expression, patch dict) for the patch in a plain ``final_answer`` (a patch, or a list's first)."""
    if isinstance(value, dict) and value.get("type") == "ImagePatch" and value.get("box") is not None:
        return "final_answer", value
    if isinstance(value, list) and value and isinstance(value[0], dict) and value[0].get("type") == "ImagePatch":
        return "final_answer[0]", value[0]
    return None


def distill(task: WorkerTask, image_index: int, out: StepOutcome, made: ImageRef | None) -> str:
    """The one line the manager keeps of a worker: its result, never its program or observations."""
    head = f"Worker {task.worker_id} (image {image_index}): {task.instruction.strip()} ->"
    program = out.program
    if not program.ok:
        return f"{head} failed ({program.error_kind} error)"
    if task.expected_output == "image":
        return f"{head} {made.line}" if made is not None else f"{head} no crop was made"
    value = program.final_answer if program.has_final_answer else None
    patch = patch_of(value)
    if patch is not None:
        p = patch[1]
        what = f" ({p['label']})" if p.get("label") else ""
        return f"{head} box {[round(v) for v in p['box']]}{what}"
    if value is None or clean(value) == "":
        return f"{head} no answer"
    text = str(value).strip().splitlines()[-1]  # the last line only, like the paper's last sentence
    return f"{head} {text[:MAX_SUMMARY_CHARS]}{caveat(program)}"


def caveat(program: Any) -> str:
    """A find() that came back empty, with the detector's reason: a count of 0 from a name the
    detector cannot look for is not evidence, and the manager must know to try another way."""
    empty = next((c for c in program.calls if c.tool == "find" and not c.result), None)
    return f" (but {textualize_call(empty)})" if empty is not None else ""


def full_trace(task: WorkerTask, image_index: int, out: StepOutcome) -> str:
    """What the no_distill ablation gives the manager instead: the worker's program and its observations."""
    return (f"Worker {task.worker_id} (image {image_index}): {task.instruction.strip()}\nProgram:\n{unscoped(out.code)}\n"
            f"Result:\n{out.observation}")


__all__ = ["ImageRef", "WorkerPrompts", "distill", "fallback_code", "full_trace", "patch_of", "run_worker", "scope_code", "unscoped"]
