"""The one step every strategy uses: code for an instruction, run in the sandbox, errors fed back.

:func:`run_step` writes a program (through any ``write(previous_code, error)`` callable: the
HYDRA reasoner, ViperGPT's whole-program prompt, a HierVA worker...), refuses a program that an
earlier step already ran, runs it, feeds errors back for a bounded number of retries, falls back
to a fixed program, textualizes the result with that step's own tool calls, and extracts the
typed guess and the boxes. The recorder uses the same function, so recorded options are exactly
what the loop would have produced.

:class:`EpisodeState` saves and restores an episode (memory entries and the sandbox namespace,
rebuilt by replaying the kept programs), for strategies that backtrack.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from PIL import Image

from hydra_vr.agent.checks import Evidence, check_answer, rewrite, run_check, run_checks
from hydra_vr.agent.program_repair import bind_unbound_thing, look_in_searched_patch
from hydra_vr.agent.rewrites import same_box
from hydra_vr.agent.types import Attempt, Task
from hydra_vr.answer_types import is_failure_answer
from hydra_vr.api.names import expression_names
from hydra_vr.api.types import Box
from hydra_vr.memory import MemoryEntry, StateMemoryBank, textualize_step
from hydra_vr.question.frame import QuestionFrame
from hydra_vr.sandbox.results import ProgramResult

CodeWriter = Callable[[str, str], str]  # (previous_code, error) -> program


class ProgramRunner(Protocol):
    """What a strategy needs from the sandbox: run a step in the episode's namespace, and reset it."""

    def run(self, code: str, image_path: str | None = None) -> Any: ...

    def reset(self) -> None: ...


@dataclass
class StepOutcome:
    attempts: list[Attempt]
    program: Any  # the last attempt's ProgramResult
    observation: str  # the textualized result, with this step's tool calls
    guess: str | None  # the program's answer in the expected type, if it gave one
    note: str | None  # why its answer was refused, for the next plan
    boxes: list[list[float]]

    @property
    def ok(self) -> bool:
        return bool(self.program.ok)

    @property
    def code(self) -> str:
        return self.attempts[-1].code if self.attempts else ""


def run_step(
    runner: ProgramRunner,
    image_path: str,
    write: CodeWriter,
    *,
    task: Task,
    frame: QuestionFrame | None,
    max_retries: int,
    fallback_code: str | None,
    earlier: Sequence[MemoryEntry] = (),
    needs_box: bool = False,
    expression: str | None = None,
) -> StepOutcome:
    """Write and run a program; retry with the error fed back; then ``fallback_code`` (if any).

    ``frame``: the question whose answer the program gives (its type, what it counts, ...), or None when
    the step's answer is not checked against one (a grounding step, a program that only looks).

    ``needs_box``: the step must end with a box (a grounding episode of one program); a program that
    runs but sets no patch as final_answer is retried with that error, then the fallback runs.
    ``expression``: the referring expression of a grounding episode; where it places its thing ("on the
    far right") and the program's patch is another of those one find() returned, the placed one is the box.
    """
    attempts: list[Attempt] = []
    code, error, program = "", "", None
    size = image_size(image_path) if task == "grounding" and image_path else None
    blind: dict[str, str] = {}  # names find() cannot look for, learnt from this step's attempts -> why
    gave_up = False
    for attempt in range(max_retries + 1):
        code = write(code, error)
        failed = next((a for a in attempts if a.code == code and not a.ok and a.error_kind not in ("repeat", "same")), None)
        if failed is not None:  # asked again, the 1.5B can write the very program that failed: it would fail again
            # Not run, and no further rewrite: told that it repeated itself, the 1.5B wrote the same program
            # again in 157 of 166 such steps of the 57 stored runs on the labelled photos and none of the
            # other 9 passed, at a call (7-10 s) each. The fallback program runs instead.
            error = f"the same program as the one that already failed in this step, not run again:\n{failed.error[:300]}"
            attempts.append(Attempt(code, False, "same", error))
            gave_up = True
            break
        repeat = repeated_step(code, earlier)
        if repeat is not None:  # the same program gives the same result: ask for another one
            error = (f"This program is the same as step {repeat.step}'s, which already ran and gave:\n{repeat.feedback[:300]}\n"
                     "Write a different program for the instruction.")
            attempts.append(Attempt(code, False, "repeat", error))
            continue
        again = next((n for n in found_names(code) if n in blind), None)
        if again is not None:  # told once and it calls the same find again: small models keep doing so
            attempts.append(Attempt(code, False, "blind_find", _blind_advice(again, blind[again], "This program calls it again.")))
            gave_up = True  # the fallback program (no find) runs instead of more rewrites
            break
        program = runner.run(code, image_path)
        for _ in range(_REPAIRS):
            repaired = _repair(code, program, needs_box)
            if repaired is None:
                break
            # "kites" read, never found: bound to find("kite"); the first of nothing found: the searched patch
            attempts.append(Attempt(code, False, repaired[2], f"{program.error}\nRepaired: {repaired[1]}"))
            code = repaired[0]
            program = runner.run(code, image_path)
        missing = (_no_box(program) or _whole_image_on_nothing(program, size) or _made_up_box(program, code)) \
            if needs_box and program.ok else None
        if missing:
            attempts.append(Attempt(code, False, "no_box", missing))
            error = missing
            continue
        off = off_expression(program, expression, runner, image_path) if needs_box and expression and program.ok else None
        if off:  # the person for "her hat": the fallback looks for the expression's own names first
            attempts.append(Attempt(code, False, "off_expression", off))
            gave_up = True
            break
        if program.ok and frame is not None and task == "vqa":
            name, why = _answer_on_blind_find(program, frame)
            if name is not None:
                blind[name] = why
                if attempt < max_retries:  # the next attempt is told why, instead of the next step repeating it
                    error = _blind_advice(name, why, f"The program's answer {_said(program)} rests on that empty result.")
                    attempts.append(Attempt(code, False, "blind_find", error))
                    continue
            wrong = _miscount(program, frame)
            if wrong and attempt < max_retries:  # counted the motorcycle for its wheels: rewrite within the step
                error = f"The program's answer {wrong}. Write a program that counts what the question asks."
                attempts.append(Attempt(code, False, "miscount", error))
                continue
        attempts.append(Attempt(code, program.ok, program.error_kind, program.error))
        if program.ok:
            break
        error = program.feedback()
    no_box = needs_box and program is not None and (_no_box(program) or _whole_image_on_nothing(program, size))
    if (program is None or not program.ok or gave_up or no_box) and fallback_code is not None:
        program = runner.run(fallback_code, image_path)
        attempts.append(Attempt(fallback_code, program.ok, program.error_kind, program.error, fallback=True))
    if program is None:  # every attempt repeated an earlier step and there is no fallback
        program = ProgramResult(ok=False, error_kind="runtime", error=error)
    observation = textualize_step(program, program.calls)
    # The program's code is evidence only in an episode's first step: later, a literal may copy an answer an
    # earlier step measured (the memory bank holds it), which is founded.
    written = attempts[-1].code if attempts and not earlier else ""
    guess, note = typed_guess(program, frame, written) if frame is not None and task == "vqa" else (None, None)
    if frame is not None and task == "vqa" and program.ok:
        look = Evidence(program.calls, look=lambda name: _look(runner, image_path, name))
        guess, nobody = rewrite("nobody_there", guess, look, frame)
        if nobody:  # the program said yes because the motorcycle is there; no one is there to ride it
            note = nobody
            observation += f"\nNote: {nobody}"
    boxes = boxes_of(program.final_answer) if program.ok and program.has_final_answer else []
    if size is not None and _whole_image_on_nothing(program, size):
        boxes = []  # the whole image after every find came back empty grounds nothing: the episode goes on
    if expression and boxes:  # one_of_many itself leaves an answer of one patch alone
        box, picked = rewrite("one_of_many", patch_boxes(program.final_answer),
                              Evidence(program.calls, image=image_path, query=expression,
                                       pick=lambda: _pick(runner, image_path, expression)), None)
        if picked:
            boxes = [box]
            observation += f"\nNote: {picked}"
    if expression and len(boxes) == 1:  # a small model takes people[-1] for "the far right" (find() lists by score)
        box, placed = rewrite("placed_box", boxes[0], Evidence(program.calls, image=image_path, query=expression,
                                                               look=lambda name: _look(runner, image_path, name)), None)
        if placed:
            boxes = [box]
            observation += f"\nNote: {placed}"
    return StepOutcome(attempts, program, observation, guess, note, boxes)


_FIND_CALL = re.compile(r"""\.find\(\s*(['"])(.+?)\1\s*\)""")


def found_names(code: str) -> list[str]:
    """The literal names a program passes to find(), lower-cased."""
    return [m.group(2).strip().lower() for m in _FIND_CALL.finditer(code)]


def _said(program: Any) -> str:
    return repr(program.final_answer)[:60] if program.has_final_answer else "(none set)"


def _blind_advice(name: str, why: str, what: str) -> str:
    return (f"find({name!r}) always comes back empty: {why}. {what} "
            f"Write the program without find({name!r}): ask image_patch.simple_query(...) about it on the whole "
            "image, or find an object the detector knows and query or crop that.")


def _answer_on_blind_find(program: Any, frame: QuestionFrame) -> tuple[str | None, str]:
    """(name, why) when the program's answer was refused and it called find() on a name the detector
    cannot look for (the usual cause: its else-branch or a 0/no built on the empty list); else (None, "")."""
    blind = [c for c in program.calls if c.tool == "find" and not c.result and c.meta.get("unsearchable")]
    if not blind:
        return None, ""
    guess, note = typed_guess(program, frame)
    if guess is not None or note is None:
        return None, ""
    call = blind[-1]
    return str(call.args.get("name", "")).strip().lower(), str(call.meta.get("mapping") or "no detector class")


# The checks of what a count counted (another thing, or every thing whatever the colour asked): a program they
# refuse is rewritten within its step, before its answer reaches the other checks.
_COUNT_CHECKS = ("miscount", "uncoloured_count")


def _miscount(program: Any, frame: QuestionFrame) -> str | None:
    """Why the program's count is not of what the question counts (:data:`_COUNT_CHECKS`), or None."""
    if frame.kind != "number" or not program.ok or not program.has_final_answer:
        return None
    answer = frame.answer.coerce(program.final_answer)
    if answer is None:
        return None
    return next((why for name in _COUNT_CHECKS if (why := run_check(name, answer, Evidence(program.calls), frame))), None)


_REPAIRS = 3  # repairs of one program in a row (each reruns it): a program may index several empty finds


def _repair(code: str, program: Any, needs_box: bool) -> tuple[str, str, str] | None:
    """(the repaired program, why, the trace kind) of a program that died on a name it never bound or, answering a
    question, on the first of a find() that found nothing (a grounding program's whole image grounds nothing); None
    otherwise."""
    if program.error_kind != "runtime":
        return None
    if (unbound := bind_unbound_thing(code, program.error)) is not None:
        return (*unbound, "unbound")
    searched = None if needs_box else look_in_searched_patch(code, program.error, program.line)
    return (*searched, "empty_find") if searched is not None else None


def _no_box(program: Any) -> str | None:
    """Why a program that ran gave no box to ground with, or None."""
    if program.has_final_answer and boxes_of(program.final_answer):
        return None
    said = repr(program.final_answer)[:80] if program.has_final_answer else "nothing"
    return (f"final_answer must be the ImagePatch of the object the expression names (for example "
            f"final_answer = people[0]), not {said}")


def _made_up_box(program: Any, code: str) -> str | None:
    """Why a grounding program's box is no answer because it wrote the box itself (the ``literal_box`` check)."""
    boxes = boxes_of(program.final_answer) if program.has_final_answer else []
    return run_checks("box", str(boxes[0]), Evidence(program.calls, code)) if boxes else None


def image_size(image_path: str) -> tuple[int, int]:
    with Image.open(image_path) as img:  # reads the header only
        return img.size


def covers_image(box: Sequence[float], size: tuple[int, int]) -> bool:
    """True when ``box`` is the whole image of ``size`` (to a pixel)."""
    return box[0] <= 1 and box[1] <= 1 and box[2] >= size[0] - 1 and box[3] >= size[1] - 1


def _whole_image_on_nothing(program: Any, size: tuple[int, int] | None) -> str | None:
    """Why a grounding program's box is no answer, or None: it is the whole image, returned because every
    find() came back empty ("the small yellow kite": find("kite") has no class, the program's else)."""
    boxes = boxes_of(program.final_answer) if program.ok and program.has_final_answer else []
    finds = [c for c in program.calls if c.tool == "find"]
    if size is None or len(boxes) != 1 or not finds or any(c.result for c in finds) or not covers_image(boxes[0], size):
        return None
    names = ", ".join(repr(c.args.get("name")) for c in finds)
    return (f"final_answer is the whole image because find({names}) found nothing: that grounds nothing. "
            "Find what the expression names by another name a tool can look for (a detector class, a shape, "
            "a colour such as 'orange region'), then pick among those patches")


def _find_source(program: Any, box: Sequence[float]) -> str | None:
    """The name of the whole-image find() that returned ``box`` (the last such call), or None."""
    for call in reversed(program.calls):
        if call.tool == "find" and any(same_box(box, d.box.to_list()) for d in call.result or []):
            return str(call.args.get("name", "")).strip().lower()
    return None


def off_expression(program: Any, expression: str, runner: ProgramRunner, image_path: str) -> str | None:
    """Why a grounding program's patch is not the thing ``expression`` names, or None.

    Told to return a patch, a small model returned the person for "his scarf", "the face of the woman on
    the left" and "the badge on his jacket" (3 of 61 benchmark expressions, each right before
    through the fallback). The expression's own names are looked for in the fallback's order
    (``expression_names``: the head noun first); when the first that finds anything is not the name the
    program's patch came from and none of what it finds overlaps that patch (IoU < 0.5), the patch is
    of another thing. A patch no whole-image find() returned, or no name found, is left alone.
    """
    boxes = boxes_of(program.final_answer) if program.has_final_answer else []
    said = _find_source(program, boxes[0]) if len(boxes) == 1 else None
    names = expression_names(expression)
    if said is None or not names or said == names[0]:
        return None
    check = runner.run("image_patch = ImagePatch(image)\n"
                       f"for expression_name in {names!r}:\n"
                       "    if image_patch.find(expression_name):\n"
                       "        break\n", image_path)
    hit = next((c for c in check.calls if c.tool == "find" and c.result), None) if check.ok else None
    if hit is None:
        return None
    name = str(hit.args.get("name", "")).strip().lower()
    mine = Box(*boxes[0])
    if name == said or any(d.box.iou(mine) >= 0.5 for d in hit.result):
        return None
    shown = ", ".join(str([round(v) for v in d.box.to_list()]) for d in hit.result[:3])
    return (f"final_answer is what find({said!r}) returned at {[round(v) for v in boxes[0]]}, but the expression "
            f"names {name!r}, and find({name!r}) found {len(hit.result)} elsewhere ({shown})")


def _look(runner: ProgramRunner, image_path: str, name: str) -> list[Any] | None:
    """What one find(name) on the whole photo returns (the ``look`` of a rewrite's evidence); None if it failed."""
    # a variable name no program writes: the episode's namespace keeps the programs' own variables
    done = runner.run(f"rewrite_look = ImagePatch(image).find({name!r})\n", image_path)
    call = next((c for c in done.calls if c.tool == "find"), None) if done.ok else None
    return None if call is None else list(call.result or [])


def _pick(runner: ProgramRunner, image_path: str, expression: str) -> list[float] | None:
    """The box of the patch of the namespace's ``final_answer`` (a list) that best_image_match picks for
    ``expression`` (the ``pick`` of a rewrite's evidence); None if that failed."""
    done = runner.run(f"grounding_pick = best_image_match(final_answer, [{expression!r}])\n", image_path)
    picked = done.variable("grounding_pick") if done.ok else None
    return list(picked.box) if picked is not None and picked.box is not None else None


def typed_guess(program: Any, frame: QuestionFrame, code: str = "") -> tuple[str | None, str | None]:
    """(the program's answer in the type ``frame``'s question expects, None) or (None, why it was refused).
    ``code``: the program's source, where the checks may read it (the literal_answer check), or "".

    A failure message from the program's own else-branch ("no bus found"), a patch, an error or a
    reply of the wrong type is never a guess; the note tells the next plan to try another way.
    """
    if not program.ok:
        return None, None  # the error is already in the feedback
    if not program.has_final_answer or program.final_answer is None:
        return None, "the program set no final_answer; try another way to get the answer"
    evidence = Evidence(program.calls)
    value, _ = rewrite("read_patch", program.final_answer, evidence, frame)  # "What is the title?" -> the patch's text
    if isinstance(value, (dict, list)):
        return None, "final_answer is a patch or a list, not an answer; ask a question about it (simple_query) instead"
    value, _ = rewrite("composed_reply", value, evidence, frame)  # "two men wearing" + "suit" + "suit" -> suit
    value, _ = rewrite("reason_clause", value, evidence, frame)  # "The road shines because it rained." -> because it rained
    spec = frame.answer
    typed = spec.coerce(value)
    if typed is not None:
        refused = check_answer(frame, typed, program.calls, code)
        return (None, refused) if refused else (typed, None)
    reason = spec.check(value)
    if is_failure_answer(value):
        return None, (f"{reason}; the detector may have no class for that name: try another approach, for example "
                      "simple_query on the whole image")
    return None, reason


def boxes_of(value: Any) -> list[list[float]]:
    """The box a final_answer grounds to as the sandbox reports it (a patch dict, or the first of a list of them)."""
    return patch_boxes(value)[:1]


def patch_boxes(value: Any) -> list[list[float]]:
    """Every box in a final_answer as the sandbox reports it (a patch dict, or a list of them)."""
    if isinstance(value, dict) and value.get("box") is not None:
        return [list(map(float, value["box"]))]
    if isinstance(value, (list, tuple)):
        return [b for v in value for b in patch_boxes(v)]
    return []


def _program_key(code: str) -> str:
    return "\n".join(line.strip() for line in code.strip().splitlines() if line.strip())


def repeated_step(code: str, earlier: Sequence[MemoryEntry]) -> MemoryEntry | None:
    """The earlier step that ran exactly this program (whitespace aside), if any."""
    key = _program_key(code)
    return next((e for e in earlier if key and key == _program_key(e.code)), None)


def result_dict(program: Any) -> dict[str, Any]:
    """A ProgramResult as trace JSON; ``calls`` are the tool calls themselves, so the answer checks can run on a
    stored run again (``benchmarks/replay_checks.py``)."""
    return {
        "ok": program.ok, "error_kind": program.error_kind, "error": program.error,
        "final_answer": program.final_answer if program.has_final_answer else None,
        "variables": [v.to_dict() for v in program.variables], "stdout": program.stdout[:2000],
        "tool_calls": program.tool_calls, "calls": [c.to_dict() for c in program.calls],
    }


@dataclass
class EpisodeState:
    """A saved point of an episode: memory entries and the programs whose variables the namespace holds."""

    entries: list[MemoryEntry] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)

    @classmethod
    def save(cls, memory: StateMemoryBank, programs: Sequence[str] | None = None) -> EpisodeState:
        """Snapshot ``memory``; the kept programs default to each entry's final code."""
        kept = list(programs) if programs is not None else [e.code for e in memory.entries if e.ok and e.code]
        return cls(copy.deepcopy(memory.entries), kept)

    def restore(self, memory: StateMemoryBank, runner: ProgramRunner, image_path: str) -> list[Any]:
        """Put ``memory`` back to this state and rebuild the sandbox namespace by replaying the programs.

        Returns the replayed programs' results (a replay that now fails is reported, not hidden).
        Variables a failed attempt assigned before a working one are not rebuilt.
        """
        memory.entries = copy.deepcopy(self.entries)
        runner.reset()
        return [runner.run(code, image_path) for code in self.programs]


__all__ = ["CodeWriter", "EpisodeState", "ProgramRunner", "StepOutcome", "boxes_of", "repeated_step", "result_dict", "run_step",
           "typed_guess"]
