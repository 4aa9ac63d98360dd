"""AVIS's actions on hydra-vr's offline tools.

Actions that look at the image are small fixed programs built from the action and its query, run in
the sandbox through the shared step (no LLM writes them). Two actions have no ImagePatch method and
run beside the sandbox: ``classify_box`` (the toolbox's classifier on the focused box's pixels; the
ImagePatch API has no classifier method) and the LLM actions ``recall`` (the model's own knowledge,
labelled as such) and ``llm_qa`` (a typed short answer from the working memory).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hydra_vr.agent.step import result_dict, run_step
from hydra_vr.agent.types import Attempt, Task
from hydra_vr.answer_types import AnswerSpec, clean, is_failure_answer
from hydra_vr.api.choose import cue
from hydra_vr.api.image_patch import load_image
from hydra_vr.api.types import Box
from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.typed import ask_typed
from hydra_vr.memory import textualize_call
from hydra_vr.prompts import render_prompt
from hydra_vr.question.frame import QuestionFrame

if TYPE_CHECKING:
    from hydra_vr.agent.loop import HydraAgent

BOX_ACTIONS = frozenset({"vqa_box", "classify_box", "fine_vqa_box", "ocr_box", "colors_box"})
RECALL_SOURCE = "LLM knowledge, not from the image"
COLOR_OPTIONS = ["red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray"]
_STOP = {"what", "which", "who", "where", "how", "why", "when", "is", "are", "does", "do", "the", "a", "an", "this", "that",
         "these", "those", "of", "in", "on", "it", "its", "there", "usually", "picture", "image", "photo", "kind", "type",
         "color", "colour", "many", "much", "left", "right", "top", "bottom", "eat", "say", "made"}


@dataclass
class Focus:
    """The focused box: the first box of the latest ``find`` that found something."""

    label: str
    box: list[float]


@dataclass
class ActionOutcome:
    observation: str
    code: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    boxes: list[list[float]] = field(default_factory=list)
    guess: str | None = None  # an answer of the episode's type this action gave (for the typed fallback)
    empty: bool = False  # nothing found, no text, an error: uninformative without asking the reasoner
    focus: Focus | None = None  # set when this action moved the focus (a find that found something)
    source: str = "tool"
    answer: str | None = None  # llm_qa's typed answer
    calls: list[Any] = field(default_factory=list)  # the vision calls it made: evidence for the answer checks


def propose_nouns(text: str) -> list[str]:
    """Object names in ``text`` the detector knows (COCO classes, synonyms, head nouns), in order."""
    from hydra_vr.api.backends.coco import CocoNameMapper

    mapper = CocoNameMapper()
    words = [w for w in re.findall(r"[a-z]+", text.lower())]
    out: list[str] = []
    for i, w in enumerate(words):
        for cand in ((f"{w} {words[i + 1]}",) if i + 1 < len(words) else ()) + (w,):
            if w in _STOP or cand in out:
                continue
            if mapper.map(cand).classes:
                out.append(cand)
                break
    return out


def clean_noun(query: str) -> str:
    """One object name from a planner's query ("the cat, dog" -> "cat")."""
    first = re.split(r"[,;/]| and | or ", query.strip().lower())[0]
    words = [w for w in re.findall(r"[a-z]+", first) if w not in {"the", "a", "an", "some", "all", "any", "find"}]
    return " ".join(words[:3])


def _select_program(expression: str) -> str:
    """The patch among ``found`` that the expression names by place or size, or by the colour a person wears
    (best_image_match reads those from the boxes and pixels), by nearness to the camera, or the most confident one."""
    if cue(expression) is not None:
        return f"best_image_match(found, [{expression!r}])"
    if set(re.findall(r"[a-z]+", expression.lower())) & {"front", "closest", "nearest"}:
        return "sort_patches_front_to_back(found)[0]"
    return "found[0]"


# The fixed program of each sandbox action; ``target`` is the focused box (the whole image while nothing is focused).
_PROGRAMS = {
    "caption": 'caption = ImagePatch(image).simple_query("Describe the image in one sentence.")',
    "vqa": "final_answer = ImagePatch(image).simple_query({query!r})",
    "find": "found = ImagePatch(image).find({noun!r})\nif found:\n    focus = found[0]",
    "vqa_box": "final_answer = {target}.simple_query({query!r})",
    "fine_vqa_box": "kind = {target}.simple_query({fine!r})",
    "ocr_box": "text = {target}.read_text()",
    "colors_box": "colour = {target}.best_text_match({colors!r})",
    "ground": "found = ImagePatch(image).find({ground_noun!r})\nfinal_answer = {select} if found else None",
}


def program_for(action: str, query: str, focus: Focus | None) -> str:
    """The program of a sandbox action, built from the action and its query."""
    if action not in _PROGRAMS:
        raise ValueError(f"{action!r} is not a sandbox action")
    thing = focus.label if focus is not None else "thing"
    ground_noun = (propose_nouns(query) or [clean_noun(query).split(" ")[-1] or "object"])[0] if action == "ground" else ""
    return _PROGRAMS[action].format(
        query=query, noun=clean_noun(query), target="focus" if focus is not None else "ImagePatch(image)",
        fine=f"What exact type, brand or species of {thing} is this?", colors=COLOR_OPTIONS, ground_noun=ground_noun,
        select=_select_program(query))


def _focus_of(program: Any) -> Focus | None:
    if not program.ok:
        return None
    found = next((v.to_dict() for v in program.variables if v.name == "found"), None)
    focus = next((v.to_dict() for v in program.variables if v.name == "focus"), None)
    if not found or not found.get("boxes") or not focus or focus.get("box") is None:
        return None
    label = next((str(c.args.get("name", "")) for c in program.calls if c.tool == "find"), "") or "object"
    return Focus(label, [float(x) for x in focus["box"]])


def run_action(ctx: HydraAgent, image_path: str, task: Task, frame: QuestionFrame | None, action: str, query: str,
               focus: Focus | None, question: str, memory_text: str, facts: str) -> ActionOutcome:
    """Execute one action and describe what it gave; ``frame``: the episode's question (None: grounding)."""
    spec = frame.answer if frame is not None else None
    if action == "classify_box":
        return _classify(ctx, image_path, focus)
    if action == "recall":
        return _recall(ctx, query or question, facts)
    if action == "llm_qa":
        return _llm_qa(ctx, question, spec, memory_text)
    code = program_for(action, query, focus)
    # Only a VQA action asking the episode's own question gives a typed guess.
    asks_question = action in ("vqa", "vqa_box") and clean(query) == clean(question)
    out = run_step(ctx.runner, image_path, lambda previous, error: code, task=task,
                   frame=frame if asks_question else None, max_retries=0, fallback_code=None)
    program = out.program
    outcome = ActionOutcome(out.observation, out.code, out.attempts, result_dict(program), out.boxes, out.guess,
                            calls=list(program.calls))
    tools = [c.tool for c in program.calls]
    if not program.ok:
        outcome.empty = True
    elif action in ("find", "ground") and not any(c.result for c in program.calls if c.tool == "find"):
        outcome.empty = True
    elif action == "ocr_box" and not any(c.result for c in program.calls if c.tool == "read_text"):
        outcome.empty = True
    elif action in ("vqa", "vqa_box", "caption", "fine_vqa_box") and "simple_query" in tools:
        said = next(c.result for c in program.calls if c.tool == "simple_query")
        outcome.empty = is_failure_answer(getattr(said, "text", said))
    if action == "find":
        outcome.focus = _focus_of(program)
    return outcome


def _classify(ctx: HydraAgent, image_path: str, focus: Focus | None) -> ActionOutcome:
    image = load_image(image_path)
    crop = image.crop(tuple(int(round(v)) for v in Box(*focus.box).clip(*image.size).to_list())) if focus else image
    with ctx.toolbox.recording() as calls:
        ctx.toolbox.classify(crop, top_k=5)
    line = textualize_call(calls[-1]) if calls else None
    where = f"the focused {focus.label} at {[round(v) for v in focus.box]}" if focus else "the whole image"
    code = f"toolbox.classify(<pixels of {where}>, top_k=5)"
    return ActionOutcome(f"{line or 'classify: no labels'} (on {where})", code=code, empty=line is None, calls=list(calls))


def _recall(ctx: HydraAgent, query: str, facts: str) -> ActionOutcome:
    messages = [ChatMessage("system", render_prompt("avis_recall_system")),
                ChatMessage("user", render_prompt("avis_recall_user", query=query, facts=facts))]
    text = ctx.llm.chat(messages, max_tokens=48, temperature=0.0).text.strip()
    text = " ".join(text.split())
    return ActionOutcome(f"recall ({RECALL_SOURCE}): {text or '(nothing)'}", source=RECALL_SOURCE,
                         empty=not text or is_failure_answer(text))


def _llm_qa(ctx: HydraAgent, question: str, spec: AnswerSpec | None, memory_text: str) -> ActionOutcome:
    if spec is None:
        return ActionOutcome("llm_qa answers questions, not expressions to ground", empty=True)
    messages = [ChatMessage("system", render_prompt("avis_answer_system")),
                ChatMessage("user", render_prompt("avis_answer_user", question=question, memory=memory_text, expected=spec.describe()))]
    reply = ask_typed(ctx.llm, messages, spec, max_tokens=24)
    if reply.answer is None:
        why = "; ".join(reply.reasons) or "no answer"
        return ActionOutcome(f"llm_qa: {reply.raw!r} refused ({why})", empty=True)
    return ActionOutcome(f"llm_qa: {reply.answer!r}", guess=reply.answer, answer=reply.answer)


__all__ = ["ActionOutcome", "BOX_ACTIONS", "COLOR_OPTIONS", "Focus", "RECALL_SOURCE", "clean_noun", "program_for",
           "propose_nouns", "run_action"]
