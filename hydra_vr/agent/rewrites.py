"""Answer rewrites, declared once beside the checks (:mod:`hydra_vr.agent.checks`): a named rule that replaces
an answer with what its own evidence says, and says why.

A rewrite is a :class:`Rewrite`: which answers it looks at (``kinds``: the expected answer types, "box" for a
grounding answer) and ``apply(evidence, frame, value)``, which returns (the new value, why) or None. The step
runs them by name where its answer takes shape (:func:`hydra_vr.agent.checks.rewrite`); every rewrite is a
firing in the trace and the reports like a check's refusal, and ``--set answers.disable=[name]`` switches it off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PIL import Image

from hydra_vr.answer_types import MAX_SHORT_WORDS, asks_anyone, composed_of
from hydra_vr.api.choose import choose, cue
from hydra_vr.api.image_patch import load_image
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.question.frame import QuestionFrame

if TYPE_CHECKING:
    from hydra_vr.agent.checks import Evidence

_VQA_KINDS = frozenset({"yesno", "choice", "number", "color", "open"})


@dataclass(frozen=True)
class Rewrite:
    """A named rule that replaces an answer (``apply(evidence, frame, value)`` -> (new value, why) or None;
    ``frame`` is None for a grounding answer, whose value is its box)."""

    name: str
    doc: str
    kinds: frozenset[str]
    apply: Callable[[Evidence, QuestionFrame | None, Any], tuple[Any, str] | None]

    def applies(self, kind: str) -> bool:
        return kind in self.kinds


def same_box(a: Sequence[float], b: Sequence[float], tol: float = 1.5) -> bool:
    return all(abs(float(u) - float(v)) <= tol for u, v in zip(a, b))


def patch_text(value: Any, calls: Sequence[Any]) -> str | None:
    """The text OCR read in a final_answer patch (or a one-patch list), when find() returned that patch as
    written text; None otherwise. Programs for "What is the heading at the top of the poster?" return the
    title's patch, and asked again the describe LLM answered "title" from the same OCR lines."""
    if isinstance(value, list):
        if len(value) != 1:
            return None
        value = value[0]
    if not isinstance(value, dict) or value.get("box") is None:
        return None
    for call in reversed(calls):
        if call.tool != "find":
            continue
        for det in call.result or []:
            if getattr(det, "text", None) and same_box(value["box"], det.box.to_list()):
                return str(det.text)
    return None


def _read_patch(ev: Evidence, frame: QuestionFrame | None, value: Any) -> tuple[Any, str] | None:
    """A reading question answered with the patch of text find() returned: its text is the answer."""
    if frame is None or not frame.reading or not isinstance(value, (dict, list)):
        return None
    text = patch_text(value, ev.calls)
    return (text, "final_answer is a patch of text find() returned: its text is the answer") if text is not None else None


def _composed_reply(ev: Evidence, frame: QuestionFrame | None, value: Any) -> tuple[Any, str] | None:
    """An answer glued from the tools' replies and the question's own words ("two men wearing" + "suit" +
    "suit"): the replies are the answer (:func:`hydra_vr.answer_types.composed_of`)."""
    if frame is None or isinstance(value, (dict, list)):
        return None
    replies = [getattr(c.result, "text", c.result) for c in ev.calls if c.tool in ("simple_query", "llm_query")]
    said = composed_of(value, frame.text, replies)
    return (said, "the answer glued the tools' replies to the question's words: the replies are the answer") if said else None


def _nobody_there(ev: Evidence, frame: QuestionFrame | None, value: Any) -> tuple[Any, str] | None:
    """"Is anyone ...?" answered other than no while the detector finds no person in the photo: no. A program
    that found the motorcycle answered "Is anyone riding the bicycle?" yes; a person it found is the evidence,
    else one more find("person") looks (``ev.look``)."""
    if frame is None or frame.kind != "yesno" or value == "no" or not asks_anyone(frame.text) or ev.look is None:
        return None
    if any(d.label == "person" for c in ev.calls if c.tool == "find" for d in c.result or []):
        return None
    found = ev.look("person")
    if found is None or found:
        return None
    return "no", 'the question asks whether anyone is there doing it, and find("person") found no one in the photo: no'


def placed_box(calls: Sequence[Any], expression: str, box: Sequence[float], image_path: str | None = None,
               look: Callable[[str], Sequence[Any] | None] | None = None) -> tuple[list[float], str] | None:
    """(the box, why) when ``expression`` tells its thing among others of its kind by place ("the person on
    the far right", "the bottom right tile"), by the colour of what a person wears ("the woman in the green
    coat": read in ``image_path``'s pixels) or by another thing it is with or on ("the man holding a bottle":
    ``look(name)`` finds it in the photo), and ``box``, the program's answer, is another of the patches
    one find() on the whole image returned than the one so picked; None otherwise (nothing told, one
    candidate, the pixels do not tell, or the program's pick agrees). Only finds whose boxes are in the
    image's own pixels are compared."""
    told = cue(expression)
    if told is None or (told.worn is not None and not image_path) or (told.other is not None and look is None):
        return None
    for call in reversed(calls):
        if call.tool != "find" or len(call.result or []) < 2:
            continue
        found = [d.box.to_list() for d in call.result]
        if not any(same_box(box, b) for b in found):
            continue

        def crops() -> list[Image.Image]:
            image = load_image(image_path)
            return [image.crop(tuple(b)) for b in found]

        idx = choose(told, found, crops, None if look is None else lambda name: [d.box.to_list() for d in look(name) or []])
        if idx is None or same_box(box, found[idx]):
            return None
        best, shown = found[idx], [round(v) for v in found[idx]]
        return best, (f"{told.describe()}: of the {len(found)} patches find({call.args.get('name')!r}) "
                      f"returned that is the one at {shown}, not final_answer's {[round(v) for v in box]}; grounded to it")
    return None


def _placed_box(ev: Evidence, frame: QuestionFrame | None, value: Any) -> tuple[Any, str] | None:
    """A grounding box that is another of one find()'s patches than the one the expression's place, worn colour or
    other thing picks (a small model takes ``people[-1]`` for "the far right"; find() lists by score)."""
    if not ev.query:
        return None
    return placed_box(ev.calls, ev.query, value, ev.image or None, ev.look)


def _one_of_many(ev: Evidence, frame: QuestionFrame | None, value: Any) -> tuple[Any, str] | None:
    """A grounding answer of several patches (``final_answer = wheels``): an expression names one thing, and
    the first patch is only the one a tool scored highest. The one ``best_image_match`` picks for the
    expression among them (its place, a worn colour, else a look at each) is the answer."""
    boxes = [list(b) for b in value] if isinstance(value, (list, tuple)) else []
    if len(boxes) < 2 or ev.pick is None or not ev.query:
        return None
    box = ev.pick()
    if box is None or same_box(box, boxes[0]):  # could not pick, or picked the first: nothing replaced
        return None
    return box, (f"final_answer held {len(boxes)} patches, and the expression names one: best_image_match picked "
                 f"the one at {[round(v) for v in box]} for {ev.query!r}")


# where a sentence gives its cause or purpose: "... because it rained", "... to stay dry", "... due to the wind"
_REASON_MARK = re.compile(r"\b(?:because(?: of)?|so that|in order to|due to|to)\s+([a-z][a-z'-]*)", re.IGNORECASE)


def reason_clause(text: str) -> str | None:
    """The clause of ``text`` that gives a reason ("The road shines because it rained." -> "because it rained"),
    when that clause is short; None without one. A bare "to" counts only before a verb ("to stay dry", not "next
    to the car")."""
    for m in _REASON_MARK.finditer(text):
        if m.group(0).lower().startswith("to ") and not wn.is_verb(m.group(1)):
            continue
        clause = text[m.start():].strip().rstrip(".!").strip()
        if 1 < len(clause.split()) <= MAX_SHORT_WORDS:
            return clause
    return None


def _reason_clause(ev: Evidence, frame: QuestionFrame | None, value: Any) -> tuple[Any, str] | None:
    """A "why" question answered with a whole sentence: the clause of it that gives the reason is the answer
    (the sentence is refused as too long for a short answer, the reason in it lost)."""
    if frame is None or not frame.reason or not isinstance(value, str) or len(value.split()) <= 3:
        return None
    clause = reason_clause(value)
    if clause is None or clause.lower() == value.strip().rstrip(".!").lower():
        return None
    return clause, f"{value[:60]!r} answers why in a sentence: its reason clause {clause!r} is the answer"


ANSWER_REWRITES: tuple[Rewrite, ...] = (
    Rewrite("read_patch", "a reading question answered with a patch of text: the text it holds", _VQA_KINDS, _read_patch),
    Rewrite("composed_reply", "an answer glued from the tools' replies and the question's words: the replies",
            _VQA_KINDS, _composed_reply),
    Rewrite("nobody_there", "'is anyone ...?' answered other than no where no person is found: no", frozenset({"yesno"}),
            _nobody_there),
    Rewrite("one_of_many", "a grounding answer of several patches: the one best_image_match picks for the expression",
            frozenset({"box"}), _one_of_many),
    Rewrite("placed_box", "a box other than the one the expression's place or worn colour picks among a find's patches",
            frozenset({"box"}), _placed_box),
    Rewrite("reason_clause", "a 'why' question answered with a sentence: the clause that gives the reason",
            frozenset({"open"}), _reason_clause),
)


__all__ = ["ANSWER_REWRITES", "Rewrite", "patch_text", "placed_box", "reason_clause", "same_box"]
