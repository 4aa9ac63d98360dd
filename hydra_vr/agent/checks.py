"""Answer checks, declared once and run by one runner for every strategy and answering role.

A check is a named object: which answers it looks at (``kinds``: the expected answer types), and a test
over the question's frame (parsed once, :mod:`hydra_vr.question`) and the evidence (the tool calls behind
the answer, and the program's code when there is one) that returns why the answer is refused, or None. :func:`run_checks` runs them in order and the first refusal
wins. Every refusal is a :class:`Firing`; :func:`collecting` gathers an episode's firings into its trace,
so reports can say how often each check fired and how accurate the answers it touched were, and
:func:`disabled` switches checks off by name (``--set answers.disable=[name, ...]``) for an ablation.
The rewrites (:mod:`hydra_vr.agent.rewrites`: an answer replaced by what its evidence says) run through
:func:`rewrite` and are recorded and switched off the same way.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from hydra_vr.answer_types import (AnswerSpec, against_search, asked_knowledge, asked_presence, expected_type, miscount,
                                  yesno_word)
from hydra_vr.agent.rewrites import ANSWER_REWRITES
from hydra_vr.api.colors import head_colors, is_color_name
from hydra_vr.api.light import measured_pole
from hydra_vr.api.tools import search_settles
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.asked import FocusAsked
from hydra_vr.question.frame import QuestionFrame, asked_focus


@dataclass(frozen=True)
class Evidence:
    """What an answer rests on: the tool calls behind it (in order) and the program's code, if any. A rewrite
    (:mod:`hydra_vr.agent.rewrites`) may also read the photo (``image``), the grounding expression (``query``:
    a box has no question frame) or look once more (``look(name)``: what one find(name) on the whole photo
    returns, None when it could not run) or pick (``pick()``: the box of the one patch, of a final_answer that
    holds several, that ``best_image_match`` says the expression names; None when it could not run)."""

    calls: Sequence[Any] = ()
    code: str = ""
    image: str = ""
    query: str = ""
    look: Callable[[str], Sequence[Any] | None] | None = None
    pick: Callable[[], list[float] | None] | None = None


@dataclass(frozen=True)
class Check:
    """A named rule over an answer: ``test(evidence, frame, answer)`` says why it is refused, or None (``frame``
    is None for a grounding answer)."""

    name: str
    doc: str
    kinds: frozenset[str]  # the answer types it looks at ("box" for a grounding answer)
    test: Callable[[Evidence, QuestionFrame | None, str], str | None]
    # the answer its evidence itself gives, where the check knows one (what the measures say), offered when an
    # episode ends with every guess refused (:func:`measured_answer`)
    measured: Callable[[Evidence, QuestionFrame], str | None] | None = None

    def applies(self, kind: str) -> bool:
        return kind in self.kinds


@dataclass(frozen=True)
class Firing:
    """One refusal (which check, the answer it refused and why) or one rewrite (``to``: what replaced it)."""

    check: str
    answer: str
    reason: str
    to: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v is not None}


# ------------------------------------------------------------------------------------------ the checks
def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def find_counts(calls: Sequence[Any], *, settled: bool = False) -> list[tuple[str, int]]:
    """(name, how many came back) of each find(); ``settled``: only those that are evidence about the scene
    (api.tools.search_settles)."""
    return [(str(c.args.get("name", "")), len(c.result or [])) for c in calls
            if c.tool == "find" and (not settled or search_settles(len(c.result or []), c.meta))]


def questions_giving(calls: Sequence[Any], spec: AnswerSpec, answer: str) -> list[str]:
    """The questions of the simple_query calls whose reply, in the expected type, is ``answer``."""
    return [str(c.args.get("question", "")) for c in calls
            if c.tool == "simple_query" and spec.coerce(getattr(c.result, "text", c.result)) == answer]


def unfounded_negative(answer: str, spec: AnswerSpec, calls: Sequence[Any]) -> str | None:
    """Why a "0", a "no" or a "yes" rests on nothing, or None.

    An empty find() for a name no tool can look for (a closed-set detector with no class for the name)
    is what makes a program answer 0 or no, or yes to a negated question; that is no evidence about the
    photo. A tool call after the last such find (simple_query, a find that can look) may be the
    evidence: accepted.
    """
    if not ((spec.kind, answer) == ("number", "0") or spec.kind == "yesno"):
        return None
    blind_at = [i for i, c in enumerate(calls) if c.tool == "find" and not c.result and c.meta.get("unsearchable")]
    if not blind_at or blind_at[-1] < len(calls) - 1:
        return None  # no blind find, or another tool looked after the last one: the answer may rest on that
    blind = calls[blind_at[-1]]
    return (f"{answer!r} rests on find({blind.args.get('name')!r}), which cannot look for that name "
            f"({blind.meta.get('mapping', 'no detector class')}); ask simple_query on the image or a crop instead")


def _unfounded_negative(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    assert frame is not None
    return unfounded_negative(answer, frame.answer, ev.calls)


def _miscount(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    assert frame is not None
    return miscount(answer, frame.counted, find_counts(ev.calls))


def _uncoloured_count(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """A count of every thing of the asked kind where the question counts those of a colour ("How many green
    apples ...?" -> how many find("apple") returned, green or not), when no call looked at the colour (a find
    naming it, a verify_property, a simple_query asking about it). find("green apple") keeps the apples whose own
    pixels are green."""
    assert frame is not None
    counted = frame.counted
    colours = head_colors(" ".join(counted.phrase)) if counted is not None else ()
    if not colours or not re.fullmatch(r"\d+", answer):
        return None

    def says_colour(call: Any) -> bool:
        words = _words(" ".join(str(v) for v in (call.args or {}).values()))
        return any(w in colours for w in words) or call.tool == "verify_property"

    if any(says_colour(c) for c in ev.calls):
        return None
    nouns = [w for w in counted.phrase if not is_color_name(w) and wn.is_noun(w)]
    if not nouns:
        return None
    thing = wn.singular(nouns[0])  # "green apples sit ...": the first noun after the colours
    for c in reversed(ev.calls):
        words = _words(str((c.args or {}).get("name", "")))
        if c.tool == "find" and words and wn.singular(words[-1]) == thing and len(c.result or []) == int(answer) > 0:
            name = " ".join(words)
            return (f"{answer!r} is how many find({name!r}) returned, every {thing} whatever its colour; the question "
                    f"counts {' '.join(counted.phrase)}: find({' '.join(colours) + ' ' + name!r}) keeps those whose own "
                    f"pixels are {' and '.join(colours)}")
    return None


def _against_search(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    assert frame is not None
    return against_search(answer, frame.presence, find_counts(ev.calls, settled=True))


def _measured_blurry(result: Any) -> bool | None:
    """A focus call's yes/no verdict: a Focus (live), its dict (a trace), or its repr (traces before Focus.to_dict)."""
    if result is None:
        return None
    if hasattr(result, "blurry"):
        return bool(result.blurry)
    if isinstance(result, dict) and "blurry" in result:
        return bool(result["blurry"])
    m = re.match(r"Focus\(share=([\d.e-]+), region=.*, photo_detail=([\d.e-]+|None)\)$", str(result))
    if m is None:
        return None
    from hydra_vr.api.focus import Focus

    return Focus(float(m.group(1)), "", None if m.group(2) == "None" else float(m.group(2))).blurry


def focus_measures(calls: Sequence[Any], region: str) -> list[str]:
    """The poles ("sharp" / "blurry") the calls measured of ``region``: is_blurry's focus calls (their box and
    background arguments say the region) and verify_property with a focus word, in order."""
    said: list[str] = []
    for c in calls:
        args = c.args or {}
        if c.tool == "focus":
            where = "background" if args.get("background") else "photo" if args.get("box") is None else "thing"
            blurry = _measured_blurry(c.result)
        elif c.tool == "verify_property" and isinstance(c.result, bool):
            measured = parse_focus_property(str(args.get("name", "")), str(args.get("property", "")))
            if measured is None:
                continue
            where, pole = measured
            blurry = (pole == "blurry") == c.result
        else:
            continue
        if where == region and blurry is not None:
            said.append("blurry" if blurry else "sharp")
    return said


def parse_focus_property(name: str, prop: str) -> tuple[str, str] | None:
    """(region, pole) of a verify_property(name, prop) whose property is a focus word, else None."""
    asked = asked_focus(f"Is the {name} {prop}?", AnswerSpec("yesno"))
    return (asked.region, dict(asked.claims)["yes"]) if asked is not None else None


def _measured_pole(ev: Evidence, frame: QuestionFrame) -> tuple[FocusAsked, str, int] | None:
    """(what the question asks of focus, the pole every focus measure of its region gives, how many measures), or
    None when it asks nothing of focus, nothing measured that region, or the measures disagree."""
    asked = frame.focus
    measured = focus_measures(ev.calls, asked.region) if asked is not None else []
    return (asked, measured[0], len(measured)) if asked is not None and len(set(measured)) == 1 else None


def _against_focus(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """A sharp or blurry answer that every focus measurement of the region asked about contradicts (a program
    that measured the background blurry, then named its variable the other way round and answered "sharp")."""
    assert frame is not None
    measured = _measured_pole(ev, frame)
    if measured is None:
        return None
    asked, pole, n = measured
    claim = asked.claim(answer)
    if claim is None or claim == pole:
        return None
    return (f"{answer!r} says the {asked.region} is {claim}, but is_blurry measured it {pole} "
            f"({n} measure(s)); answer from that measurement")


def _focus_answer(ev: Evidence, frame: QuestionFrame) -> str | None:
    """The answer whose pole every focus measure of the asked region gives, or None."""
    measured = _measured_pole(ev, frame)
    return next((answer for answer, pole in measured[0].claims if pole == measured[1]), None) if measured else None


def _light_poles(ev: Evidence) -> list[tuple[str, bool]]:
    """The poles ("day", "night", "sunny") the photo's light measure gave in the calls, each with whether it saw a
    clear sky: simple_query replies whose source is the measure (``api.light``; a live Answer or its dict in a
    trace), in order."""
    poles = []
    for c in ev.calls:
        r = c.result
        source, evidence = (r.get("source"), r.get("evidence")) if isinstance(r, dict) else (
            getattr(r, "source", None), getattr(r, "evidence", None))
        if c.tool == "simple_query" and source == "light" and (said := measured_pole(str(evidence or ""))):
            poles.append(said)
    return poles


def _light_answer(ev: Evidence, frame: QuestionFrame) -> str | None:
    """The answer claiming the pole the light measure gave, where every measure of the asked kind agrees; else None."""
    asked = frame.light
    if asked is None:
        return None
    claimed = {pole for _, pole in asked.claims}
    said = {p for p, clear in _light_poles(ev) if p in claimed and (clear or not asked.needs_clear_sky)}
    if len(said) != 1:
        return None
    pole = said.pop()
    return next((answer for answer, claim in asked.claims if claim == pole), None)


def _against_light(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """An answer to a question of the photo's light (day or night, a clear sky) that its pixel measure contradicts:
    a step that measured night and a summary that guessed "day" from a lit lamp."""
    assert frame is not None
    measured = _light_answer(ev, frame)
    if measured is None or frame.light is None or frame.light.claim(answer) is None or measured == answer:
        return None
    return (f"{answer!r} says {frame.light.claim(answer)}, but the photo's light was measured "
            f"{frame.light.claim(measured)} from its pixels; answer from that measurement")


def _options_dropped(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """Asked open ("How old is she?" for "young or old?"), the describe LLM answers from habit, not between
    the two the question names. Only when every reply that gives the answer came so."""
    assert frame is not None
    spec = frame.answer
    if not spec.options:
        return None
    asked = questions_giving(ev.calls, spec, answer)
    if not asked or any(set(expected_type(q).options) >= set(spec.options) for q in asked):
        return None
    return (f"{answer!r} is simple_query({asked[-1]!r})'s reply, but that question does not name the choices "
            f"({', '.join(spec.options)}); ask the question as given")


def _knowledge_dropped(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """Without its knowledge word ("called") a question about "this <thing>" is answered from the findings,
    not from what is known of the thing they name. Only when every reply that gives the answer came so."""
    assert frame is not None
    if frame.knowledge is None:
        return None
    asked = questions_giving(ev.calls, frame.answer, answer)
    if not asked or any(asked_knowledge(q) is not None for q in asked):
        return None
    return (f"{answer!r} is simple_query({asked[-1]!r})'s reply, but that question asks what the photo shows, not what "
            "is known of the thing (the question's own words say what it asks); ask the question as given")


def _place_from_depth(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """compute_depth tells near from far, not where in the frame a thing lies. A reply of a simple_query is
    left alone, and so is a program that measured no depth."""
    assert frame is not None
    if frame.place is None or not any(c.tool == "compute_depth" for c in ev.calls):
        return None
    if questions_giving(ev.calls, frame.answer, answer):
        return None
    return (f"{answer!r} was decided with compute_depth, which tells how far a thing is, not where it lies in the photo; "
            "compare its box (horizontal_center, vertical_center) with the image's, or ask the question as given")


def _names_it(words: Sequence[str], text: str) -> bool:
    """Whether ``text`` names one of the thing's ``words``: the word itself (a colour too), or a noun WordNet
    relates to it (a kind, a group or a sibling of it; :func:`hydra_vr.lexicon.wordnet.related`)."""
    said = _words(str(text))
    return any(w in said or (not is_color_name(w) and any(wn.related(w, s) for s in said if wn.is_noun(s)
                                                            and not is_color_name(s))) for w in words)


def _shows(words: Sequence[str], call: Any) -> str | None:
    """What one tool call shows of the thing (``words``): "there" (it found or saw it), "none" (it looked and
    did not), or None (it says nothing of the thing). A question that takes the thing as given ("What colour
    is the brown shape?" -> "brown") shows nothing: its reply echoes the question."""
    tool, args, result = call.tool, call.args or {}, call.result
    if tool == "find":
        found = list(result or [])
        if any(_names_it(words, getattr(d, "label", "")) for d in found):
            return "there"
        if not search_settles(len(found), call.meta or {}):
            return None  # a detector's miss says nothing of the scene (NanoDet misses small boats)
        if _names_it(words, args.get("name", "")):
            return "there" if found else "none"
        return "none" if found else None  # what a search found that is not the thing (a rectangle, no triangle)
    if tool == "verify_property":
        if _names_it(words, f"{args.get('name', '')} {args.get('property', '')}"):
            return "there" if result is True else "none" if result is False else None
        return None
    if tool == "simple_query":
        question, reply = str(args.get("question", "")), str(getattr(result, "text", result) or "")
        asked = asked_presence(question)
        if asked is not None and _names_it(words, asked.thing):
            said = yesno_word(reply)
            if said is not None:
                return "there" if (said == "yes") != asked.negated else "none"
        if _names_it(words, reply) and not _names_it(words, question):
            return "there"  # "What is on the table?" -> "a cup"
    return None


def _presence_unsearched(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """A yes or no to "is there a <thing>?" against what the calls showed, or resting on no search at all.

    What a call shows (:func:`_shows`): the thing is there (a find of it, or of a kind, group or sibling of it
    in WordNet, that came back with something; a detection labelled as it; a presence question about it
    answered so; a property verified on it) or it is not (such a search that came back empty over every
    pixel, or a search that came back with other things only). A "there is" is refused when calls showed
    that it is not and none that it is (a summarizer reading "3 objects found: rectangle" answers yes to a
    triangle); a "there is none" when calls showed it and none showed otherwise, or when nothing searched at
    all. A question that takes the thing as given ("What colour is the brown shape?" -> "brown") shows
    nothing either way."""
    assert frame is not None
    presence = frame.presence
    if presence is None or answer not in ("yes", "no"):
        return None
    words = [w for w in _words(presence.thing)
             if w not in wn.GENERIC_NOUNS and (wn.is_noun(w) or is_color_name(w))]
    if not words:
        return None  # "is there anything": every search is about it
    shown = {_shows(words, c) for c in ev.calls}
    says_there = (answer == "yes") != presence.negated
    if presence.where and not says_there:
        return None  # "no dog on the sofa": a dog found elsewhere does not contradict it
    claimed, opposite = ("there", "none") if says_there else ("none", "there")
    if claimed in shown:
        return None
    # A "there is" nothing showed may still be known (OCR lines, the describe LLM's reading of the findings):
    # refused only against calls that showed otherwise. A "there is none" needs at least a search.
    if opposite not in shown and (says_there or _searched(ev.calls)):
        return None
    looked = ", ".join(f"{c.tool}({next(iter((c.args or {}).values()), '')!r})" for c in ev.calls
                       if c.tool in ("find", "simple_query", "verify_property")) or "none"
    claim = "there is" if says_there else "there is no"
    why = "the calls showed the opposite" if opposite in shown else "no tool call showed that"
    return (f"{answer!r} says {claim} {presence.thing}, but {why} (calls: {looked}); "
            f"find({presence.thing!r}) or ask simple_query whether there is one")


def _existence_for_state(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """A yes or no to how a thing is ("Is the kite flying?", "Is the bowl empty?", "Is the man wearing a
    watch?") that rests on finds of that thing alone: a find tells that the thing is there, not what the
    question asks of it. A program wrote ``bool_to_yesno(exists("kite"))``. Not judged: a presence question (a
    find is its evidence), a question with a colour word (a find of "red car" measures the colour), a find of
    another thing the question names (the watch), any call that looked further (simple_query,
    verify_property, ...), and a "no" where the finds came back empty (what is not there is not flying)."""
    assert frame is not None
    if frame.presence is not None or frame.focus is not None or frame.subject is None or answer not in ("yes", "no"):
        return None
    if not ev.calls or any(c.tool != "find" for c in ev.calls) or any(is_color_name(w) for w in _words(frame.text)):
        return None
    subject = [w for w in _words(frame.subject) if wn.is_noun(w) and w not in wn.GENERIC_NOUNS]
    names = [str((c.args or {}).get("name", "")) for c in ev.calls]
    for name in names:
        nouns = [w for w in _words(name) if wn.is_noun(w)]
        if not nouns or not all(any(wn.related(n, s) for s in subject) for n in nouns):
            return None  # a find of another thing the question names (the watch of "wearing a watch?")
    if answer == "no" and not any(c.result for c in ev.calls):
        return None
    return (f"{answer!r} rests only on find({names[-1]!r}), which tells whether it is there, not what the question "
            f"asks of it: ask simple_query (or verify_property) about it")


def _off_category(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """An answer to "which <category>?" that names no kind of the category (``QuestionFrame.off_category``: "what
    utensil" -> cup is refused, "what language" is not judged)."""
    assert frame is not None
    why = frame.off_category(answer)
    return why and f"{why}: name the {frame.category} the tools see (classify or ask simple_query about it)"


def _restated_subject(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """An answer that only names the thing the question is about ("Where does this bird usually nest?" ->
    "parrot"; "What is the man holding?" -> "man"): the answer is the subject's head noun or a kind of it
    (WordNet). Judged only where the question asks what the subject does (the frame's ``action``), not which kind
    it is ("What bird is this?", the frame's category) nor what it is or is called ("What is the blue shape?"), nor
    where the answer is text read off the thing ("What does the sign say?" -> "stop": a word, not a kind of sign)."""
    assert frame is not None
    if frame.category is not None or frame.action is None or not frame.subject or frame.reading:
        return None
    head, name = frame.subject.split()[-1], wn.answer_noun(answer)
    if name is None or not (wn.singular(name) == wn.singular(head) or wn.word_is_a(name, head)):
        return None
    return f"{answer!r} only names the {frame.subject} the question is about; the question asks something about it"


def _searched(calls: Sequence[Any]) -> bool:
    """Whether any call looked at the photo for things (a find, or a question to the VQA tool)."""
    return any(c.tool in ("find", "simple_query") for c in calls)


# ImagePatch(image, 100, 100, 200, 200) or .crop(10, 20, 300, 400): a box of numbers the program wrote itself
_LITERAL_BOX = re.compile(r"(?:ImagePatch\(\s*\w+\s*|\.crop\(\s*)(?:,\s*)?(?:[xy][12]\s*=\s*)?-?\d+(?:\.\d+)?\s*,\s*"
                          r"(?:[xy][12]\s*=\s*)?-?\d+(?:\.\d+)?\s*,\s*(?:[xy][12]\s*=\s*)?-?\d+(?:\.\d+)?\s*,\s*"
                          r"(?:[xy][12]\s*=\s*)?-?\d+(?:\.\d+)?\s*\)")


def _literal_box(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """A box the program built from numbers it wrote (``ImagePatch(image, 100, 100, 200, 200)``) grounds
    nothing a tool saw, unless a find() returned that very box."""
    if not _LITERAL_BOX.search(ev.code):
        return None
    box = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", answer)[:4]]
    found = [d.box.to_list() for c in ev.calls if c.tool == "find" for d in (c.result or [])]
    if len(box) == 4 and any(all(abs(a - b) <= 1.5 for a, b in zip(box, f)) for f in found):
        return None
    return ("final_answer is a patch built from numbers the program wrote, not a box a tool returned: find() the "
            "thing the expression names (or a colour region of it) and return one of those patches")


def _final_answer_assignments(tree: ast.AST) -> list[ast.AST]:
    """Every statement in ``tree`` that assigns final_answer (plain, augmented or annotated)."""
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and any(getattr(t, "id", None) == "final_answer" for t in getattr(n, "targets", [getattr(n, "target", None)]))]


def _written_answer(code: str) -> bool:
    """Whether every assignment to final_answer in ``code`` is an unconditional top-level literal
    (``final_answer = 'left'``): the program's answer does not depend on anything it ran."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    top = [n for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "final_answer" for t in n.targets)]
    every = _final_answer_assignments(tree)
    return bool(top) and len(top) == len(every) and all(isinstance(n.value, ast.Constant) for n in top)


_PRESENCE_CALLS = frozenset({"find", "exists"})


def _presence_gated(code: str) -> bool:
    """Whether every assignment to final_answer in ``code`` is a literal and the program read nothing of its finds
    but whether any came back (``if tigers: final_answer = 'going away'``): no patch attribute (a place, a size), no
    call but ``ImagePatch(...)``, ``find`` and ``exists`` (not even ``len``: a count may pick the literal)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    every = _final_answer_assignments(tree)
    if not every or not all(isinstance(n.value, ast.Constant) for n in every):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr not in _PRESENCE_CALLS:
            return False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Attribute)
                                               or getattr(node.func, "id", None) == "ImagePatch"):
            return False
    return True


def _finds_bear_on(names: Sequence[str], frame: QuestionFrame) -> bool:
    """Whether a find's presence can itself pick the answer: a find of a choice's option ("a cat or a dog?" ->
    find('cat')), a colour in a find's name (find('red car') measures the colour)."""
    words = [w for name in names for w in _words(name)]
    if frame.kind == "color":
        return any(is_color_name(w) for w in words)
    options = [w for o in frame.answer.options for w in _words(o)]
    return any(w == o or (wn.is_noun(w) and wn.is_noun(o) and wn.related(w, o)) for w in words for o in options)


def _literal_answer(ev: Evidence, frame: QuestionFrame | None, answer: str) -> str | None:
    """An answer the program wrote down as a literal that nothing it ran decides is the reasoner's guess: it called
    no tool at all, or (a choice or a colour) it called only find() and read no more of it than whether something came
    back, where that presence cannot pick the answer (the tiger found, "going away" written). Only where the
    program's code is known (a step's own answer)."""
    if not ev.code:
        return None
    if not ev.calls:
        if not _written_answer(ev.code):
            return None
        return ("the program wrote final_answer as a literal without calling any tool, so nothing looked at the photo: "
                "call the ImagePatch operations that find or measure what the question asks and answer from their results")
    if frame is None or frame.kind not in ("choice", "color") or any(c.tool not in _PRESENCE_CALLS for c in ev.calls):
        return None
    names = [str(next(iter((c.args or {}).values()), "")) for c in ev.calls]
    if not _presence_gated(ev.code) or _finds_bear_on(names, frame):
        return None
    looked = ", ".join(f"find({n!r})" for n in names)
    return (f"final_answer is a literal the program wrote, and all it ran ({looked}) tells only whether the thing is "
            f"there, not which answer is right: measure what the question asks (the patch's place, its colours, a "
            f"simple_query with the options) and answer from the result")


ANSWER_CHECKS: tuple[Check, ...] = (
    Check("unfounded_negative", "a 0, no or yes that rests only on a find() no tool could do",
          frozenset({"number", "yesno"}), _unfounded_negative),
    Check("miscount", "a count of another thing than the one the question counts", frozenset({"number"}), _miscount),
    Check("uncoloured_count", "a count of every thing of the kind where the question counts those of a colour",
          frozenset({"number"}), _uncoloured_count),
    Check("against_search", "a yes/no to a negated presence question that contradicts the finds", frozenset({"yesno"}),
          _against_search),
    Check("presence_unsearched", "a yes/no to a presence question against what the calls showed, or a no from no search",
          frozenset({"yesno"}), _presence_unsearched),
    Check("existence_for_state", "a yes/no to how a thing is that rests on finds of that thing alone",
          frozenset({"yesno"}), _existence_for_state),
    Check("off_category", "an answer to 'which <category>?' that is no kind of the category (WordNet)", frozenset({"open"}),
          _off_category),
    Check("restated_subject", "an answer that only names the thing the question is about (or a kind of it, WordNet)",
          frozenset({"open"}), _restated_subject),
    Check("against_focus", "a sharp/blurry answer that every focus measurement of the asked region contradicts",
          frozenset({"choice", "yesno"}), _against_focus, measured=_focus_answer),
    Check("against_light", "a day/night or sunny/overcast answer the photo's light measure contradicts",
          frozenset({"choice", "yesno"}), _against_light, measured=_light_answer),
    Check("options_dropped", "a choice answered by a simple_query that did not name the choices", frozenset({"choice"}),
          _options_dropped),
    Check("place_from_depth", "where a thing lies in the photo decided by depth", frozenset({"choice", "open"}),
          _place_from_depth),
    Check("knowledge_dropped", "a knowledge question answered by a simple_query without its knowledge word",
          frozenset({"yesno", "choice", "number", "color", "open"}), _knowledge_dropped),
    # not open answers: a name or a fact the reasoner knows ("what is 'np' short for?") needs no look at the photo
    Check("literal_answer", "a step's answer written as a literal by a program that called no tool, or only finds "
          "whose presence cannot pick it",
          frozenset({"yesno", "choice", "number", "color"}), _literal_answer),
    Check("literal_box", "a grounding box built from numbers no tool returned", frozenset({"box"}), _literal_box),
)


def check_names() -> tuple[str, ...]:
    """Every answer rule an ablation may switch off: the checks, then the rewrites."""
    return tuple(c.name for c in (*ANSWER_CHECKS, *ANSWER_REWRITES))


# ------------------------------------------------------------------------------------------ the runner
_DISABLED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("hydra_vr_disabled_checks", default=frozenset())
_FIRED: contextvars.ContextVar[list[Firing] | None] = contextvars.ContextVar("hydra_vr_fired_checks", default=None)


@contextlib.contextmanager
def disabled(names: Sequence[str]) -> Iterator[None]:
    """Switch the named checks off in this context (an ablation); unknown names are an error."""
    unknown = sorted(set(names) - set(check_names()))
    if unknown:
        raise ValueError(f"unknown answer checks {unknown}; the checks are {', '.join(check_names())}")
    token = _DISABLED.set(frozenset(names))
    try:
        yield
    finally:
        _DISABLED.reset(token)


@contextlib.contextmanager
def collecting() -> Iterator[list[Firing]]:
    """Gather every firing in this context (an episode) into the yielded list."""
    fired: list[Firing] = []
    token = _FIRED.set(fired)
    try:
        yield fired
    finally:
        _FIRED.reset(token)


def _active(check: Check, kind: str) -> bool:
    """Whether ``check`` runs on an answer of type ``kind``: it applies to it and is not switched off."""
    return check.name not in _DISABLED.get() and check.applies(kind)


def _fire(check: Check, kind: str, answer: str, evidence: Evidence, frame: QuestionFrame | None) -> str | None:
    """Run ``check`` unless it is switched off or does not apply to ``kind``; record its refusal, if any."""
    if not _active(check, kind):
        return None
    reason = check.test(evidence, frame, answer)
    if reason and (fired := _FIRED.get()) is not None:
        fired.append(Firing(check.name, answer, reason))
    return reason


def run_checks(kind: str, answer: str, evidence: Evidence, frame: QuestionFrame | None = None) -> str | None:
    """Why ``answer`` (of answer type ``kind``: a VQA kind, or "box") to the question of ``frame`` (None for a
    box) is refused by the first check that refuses it, or None. Each refusal is recorded in the
    :func:`collecting` context, if any."""
    return next((reason for check in ANSWER_CHECKS if (reason := _fire(check, kind, answer, evidence, frame))), None)


def rewrite(name: str, value: Any, evidence: Evidence, frame: QuestionFrame | None) -> tuple[Any, str | None]:
    """(the value, why) after the named rewrite (:data:`ANSWER_REWRITES`), where it applies to ``frame``'s answer
    type ("box" without a frame) and is not switched off; (``value``, None) when it leaves the value alone. Each
    rewrite is recorded like a refusal, with what replaced the value."""
    rule = next(r for r in ANSWER_REWRITES if r.name == name)
    if name in _DISABLED.get() or not rule.applies(frame.kind if frame is not None else "box"):
        return value, None
    done = rule.apply(evidence, frame, value)
    if done is None:
        return value, None
    if (fired := _FIRED.get()) is not None:
        fired.append(Firing(name, str(value)[:200], done[1], str(done[0])[:200]))
    return done


def run_check(name: str, answer: str, evidence: Evidence, frame: QuestionFrame) -> str | None:
    """One check by name, where it applies to ``frame``'s answer type (a step rewrites a program it refuses
    before the answer reaches the others); its refusal is recorded like any other, and an ablation that
    switches it off switches this off too."""
    return _fire(next(c for c in ANSWER_CHECKS if c.name == name), frame.kind, answer, evidence, frame)


def check_answer(frame: QuestionFrame, answer: str, calls: Sequence[Any], code: str = "") -> str | None:
    """:func:`run_checks` for a VQA answer to the question of ``frame`` resting on ``calls``."""
    return run_checks(frame.kind, answer, Evidence(calls, code), frame)


def refused(frame: QuestionFrame, answer: str, calls: Sequence[Any]) -> bool:
    """Whether a check refuses ``answer``, without recording a firing (the answer was judged when it was given)."""
    token = _FIRED.set(None)
    try:
        return check_answer(frame, answer, calls) is not None
    finally:
        _FIRED.reset(token)


def measured_answer(frame: QuestionFrame, calls: Sequence[Any]) -> tuple[str, str] | None:
    """(answer, check) the evidence itself gives: the first check, switched on and applying to the question, whose
    ``measured`` knows one ("blurry" where every focus measure of the background said so); None otherwise."""
    for check in ANSWER_CHECKS:
        if check.measured is None or not _active(check, frame.kind):
            continue
        answer = check.measured(Evidence(calls), frame)
        if answer is not None:
            return answer, check.name
    return None


__all__ = ["ANSWER_CHECKS", "Check", "Evidence", "Firing", "check_answer", "check_names", "collecting", "disabled",
           "find_counts", "measured_answer", "questions_giving", "refused", "run_check", "run_checks", "unfounded_negative"]
