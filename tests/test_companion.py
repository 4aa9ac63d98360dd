"""Picking one of several found things by another thing it is with or on ("the boy holding a kite").

Two people found, one holding the thing the description names: the boxes say which (the held thing lies at
or in that person's box), with no model. Every phrasing here is this file's own.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from PIL import Image

from hydra_vr.agent import checks
from hydra_vr.api import bind_toolbox
from hydra_vr.api.choose import choose, cue
from hydra_vr.api.companion import companion, pick_by_companion
from hydra_vr.api.helpers import best_image_match
from hydra_vr.api.types import Box, Detection, ToolCallRecord
from hydra_vr.api.toolbox import VisionToolbox
from hydra_vr.config import HydraConfig


@pytest.mark.parametrize(
    ("text", "name", "relation"),
    [
        ("the boy holding a kite", "kite", "with"),
        ("the woman carrying an orange handbag", "orange handbag", "with"),
        ("the dog with a frisbee in its mouth", "frisbee", "with"),
        ("the teapot on the tray", "tray", "in"),
        ("the cat sitting inside the cardboard box", "cardboard box", "in"),
        ("the vase on top of the piano", "piano", "in"),
        ("the girl riding a horse", "horse", "with"),
    ],
)
def test_the_other_thing_a_description_names(text: str, name: str, relation: str) -> None:
    other = companion(text)
    assert other is not None and (other.name, other.relation) == (name, relation)


@pytest.mark.parametrize("text", ["the mug on the left", "the lamp in the corner", "the tallest tree",
                                  "the bird in the middle of the photo", "the kite", ""])
def test_a_place_is_no_other_thing(text: str) -> None:
    assert companion(text) is None


# two people side by side, best first by score, not by place
_PEOPLE = [[300.0, 40.0, 420.0, 400.0], [60.0, 50.0, 170.0, 390.0]]
_KITE_IN_LEFT_HAND = [[150.0, 10.0, 200.0, 60.0]]  # held out past the edge of the left person's box


def test_the_candidate_holding_the_other_thing_is_picked() -> None:
    assert pick_by_companion(_PEOPLE, _KITE_IN_LEFT_HAND) == 1
    # nothing found for the other thing, or it lies between them: the boxes do not tell
    assert pick_by_companion(_PEOPLE, []) is None
    assert pick_by_companion(_PEOPLE, [[165.0, 200.0, 305.0, 240.0]]) is None
    # the other thing far from both
    assert pick_by_companion(_PEOPLE, [[600.0, 10.0, 640.0, 40.0]]) is None
    # a box of the other thing that is a candidate's own box does not count for it
    assert pick_by_companion(_PEOPLE, [_PEOPLE[0]]) is None
    # a small thing on one of two trays: the tray it lies in
    trays = [[0.0, 300.0, 200.0, 380.0], [250.0, 300.0, 460.0, 380.0]]
    assert pick_by_companion(trays, [[300.0, 310.0, 340.0, 350.0]]) == 1


def test_choose_looks_for_the_other_thing_only_when_asked_to() -> None:
    told = cue("the boy holding a kite")
    assert told is not None and told.other is not None and told.where is None
    looked: list[str] = []

    def look(name: str) -> Sequence[Sequence[float]]:
        looked.append(name)
        return _KITE_IN_LEFT_HAND

    assert choose(told, _PEOPLE, lambda: [], look) == 1 and looked == ["kite"]
    assert choose(told, _PEOPLE, lambda: [], None) is None  # no way to look: no pick
    # a place outranks the other thing ("the boy holding a kite on the right")
    placed = cue("the boy on the right holding a kite")
    assert placed is not None and placed.where is not None and choose(placed, _PEOPLE, lambda: [], look) == 0


class _Boxes:
    """A detector that finds the given boxes for each name (a fake tool: this tests the pick, not detection)."""

    def __init__(self, found: dict[str, list[list[float]]]) -> None:
        self.found = found

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        return [Detection(Box(*b), q, 0.9 - 0.1 * i, "fake", query=q) for q in queries for i, b in enumerate(self.found.get(q, []))]


def test_best_image_match_picks_the_one_holding_the_other_thing() -> None:
    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _Boxes({"boy": _PEOPLE, "kite": _KITE_IN_LEFT_HAND})
    Patch = bind_toolbox(tb)
    root = Patch(Image.new("RGB", (640, 420), "white"))
    boys = root.find("boy")
    assert [p.box for p in boys] == _PEOPLE
    with tb.recording() as calls:
        picked = best_image_match(boys, ["the boy holding a kite"])
    assert picked.box == _PEOPLE[1]
    assert [(c.tool, c.args.get("name")) for c in calls] == [("find", "kite")]  # looked for in the photo, no VQA


def _find(name: str, boxes: list[list[float]]) -> ToolCallRecord:
    return ToolCallRecord("find", {"name": name}, [Detection(Box(*b), name, 0.9, "test") for b in boxes], 1.0)


def test_a_grounding_box_is_moved_to_the_one_holding_the_other_thing() -> None:
    calls = [_find("boy", _PEOPLE)]
    look = lambda name: [Detection(Box(*b), name, 0.8, "test") for b in _KITE_IN_LEFT_HAND] if name == "kite" else []  # noqa: E731
    ev = checks.Evidence(calls, query="the boy holding a kite", look=look)
    box, why = checks.rewrite("placed_box", _PEOPLE[0], ev, None)
    assert box == _PEOPLE[1] and "holding kite" in (why or "")
    # no way to look, or the program's box already the one: left alone
    assert checks.rewrite("placed_box", _PEOPLE[0], checks.Evidence(calls, query="the boy holding a kite"), None) == (_PEOPLE[0], None)
    assert checks.rewrite("placed_box", _PEOPLE[1], ev, None) == (_PEOPLE[1], None)


# What a found thing holds: the inverse pick, for "what is she carrying?" (every phrasing here is this file's own).
_LEFT, _RIGHT = [40.0, 60.0, 200.0, 400.0], [380.0, 50.0, 560.0, 410.0]
_JUG_HELD_OUT = [350.0, 150.0, 400.0, 230.0]  # sticks out of the right person's box on the left, as a held thing does
_STOOL_UNDER_LEFT = [60.0, 300.0, 190.0, 410.0]
_MUG_ON_THE_FLOOR = [250.0, 380.0, 290.0, 410.0]


def test_held_by_keeps_the_things_a_holders_box_holds() -> None:
    from hydra_vr.api.companion import held_by

    things = [_JUG_HELD_OUT, _MUG_ON_THE_FLOOR, _STOOL_UNDER_LEFT, [370.0, 40.0, 570.0, 420.0]]
    assert held_by(_RIGHT, things) == [0]  # the mug is between them; the last is the holder itself, grown
    assert held_by(_LEFT, things) == [2]  # geometry alone: which kinds may be held is WordNet's (below)
    assert held_by(_LEFT, [[0.0, 0.0, 600.0, 420.0]]) == []  # bigger than the holder: what she is in, not holds


@pytest.mark.parametrize(("verb", "holds"), [("holding", True), ("carries", True), ("clutching", True), ("grasping", True),
                                              ("wearing", False), ("eating", False), ("riding", False), ("throwing", False)])
def test_wordnet_says_which_verbs_hold(verb: str, holds: bool) -> None:
    from hydra_vr.lexicon import wordnet as wn

    assert wn.holds(verb) is holds


@pytest.mark.parametrize(("name", "holdable"), [("bottle", True), ("umbrella", True), ("handbag", True), ("cell phone", True),
                                                 ("chair", False), ("bench", False), ("bicycle", False), ("tie", False)])
def test_wordnet_says_what_may_be_held(name: str, holdable: bool) -> None:
    from hydra_vr.lexicon import wordnet as wn

    assert wn.holdable(name) is holdable


class _Classes:
    """A detector that finds fixed things in any image (a fake tool: this tests what the answer reads off the boxes)."""

    def __init__(self, found: list[tuple[str, float, list[float]]]) -> None:
        self.found = found

    def detect_classes(self, image: Image.Image) -> list[Detection]:
        return [Detection(Box(*b), label, score, "fake") for label, score, b in self.found]

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        return [d for d in self.detect_classes(image) if d.label in queries]


def _held_describe(found: list[tuple[str, float, list[float]]], replies: list[str]):
    import json

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.question import parse

    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _Classes(found)
    chat = ScriptedChat(responses=[json.dumps({"answer": r}) for r in replies])
    return DescribeVQA(ToolContext(toolbox=tb, llm=lambda: chat, read_question=parse)), chat


def test_what_a_person_holds_is_the_thing_in_their_box_not_any_thing_in_the_photo() -> None:
    from hydra_vr.question import parse

    assert parse("What is the lady on the right clutching?").held
    assert not parse("What is the lady on the right wearing?").held
    found = [("person", 0.8, _LEFT), ("person", 0.7, _RIGHT), ("bottle", 0.5, _JUG_HELD_OUT),
             ("chair", 0.6, _STOOL_UNDER_LEFT), ("cup", 0.9, _MUG_ON_THE_FLOOR)]
    scene = Image.new("RGB", (600, 420), (200, 190, 170))
    d, chat = _held_describe(found, ["cup"])
    got = d.answer(scene, "What is the lady on the right clutching?")
    assert (got.text, got.source) == ("bottle", "describe:held") and chat.calls == []
    assert "Held by the lady at [380, 50, 560, 410]: bottle 0.5" in got.evidence
    # the one on the left sits on a chair and holds nothing found: the LLM answers from the findings, as before
    got = d.answer(scene, "What is the lady on the left clutching?")
    assert (got.text, got.source) == ("cup", "describe") and len(chat.calls) == 1


def test_what_several_people_carry_is_what_any_of_them_holds() -> None:
    found = [("person", 0.8, _LEFT), ("person", 0.7, _RIGHT), ("umbrella", 0.4, [20.0, 20.0, 90.0, 120.0])]
    d, _ = _held_describe(found, ["cup"])
    got = d.answer(Image.new("RGB", (600, 420), (200, 190, 170)), "What are the two hikers carrying?")
    assert (got.text, got.source) == ("umbrella", "describe:held")
    # one person asked about, no cue: the most prominent one (the right one, larger here), who holds nothing found
    got = d.answer(Image.new("RGB", (600, 420), (200, 190, 170)), "What is the hiker carrying?")
    assert got.source == "describe"


def test_a_yes_no_of_holding_is_decided_where_the_thing_lies() -> None:
    from hydra_vr.question import parse

    assert parse("Is the lady on the right clutching a jug?").held_thing == "jug"
    assert parse("What is the lady clutching in her hand?").held_thing is None
    found = [("person", 0.8, _LEFT), ("person", 0.7, _RIGHT)]

    class _Jug(_Classes):  # the search by name finds the jug in the right person's hand
        def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
            return [Detection(Box(*_JUG_HELD_OUT), "jug", 0.6, "fake", query=q) for q in queries if q == "jug"]

    d, chat = _held_describe(found, ["no"])
    d.ctx.toolbox._backends["detector"] = _Jug(found)
    scene = Image.new("RGB", (600, 420), (200, 190, 170))
    got = d.answer(scene, "Is the lady on the right clutching a jug?")
    assert (got.text, got.source) == ("yes", "describe:held") and chat.calls == []
    got = d.answer(scene, "Is the lady on the left clutching a jug?")
    assert (got.text, got.source) == ("no", "describe:held")
    # a detector's miss is no evidence: the held-thing search decides nothing, and with no finding bearing on the
    # question the yes/no prior answers (describe's yesno_prior), not a "no" read from the miss
    got = d.answer(scene, "Is the lady on the left clutching a parasol?")
    assert (got.text, got.source) == ("yes", "describe:prior") and chat.calls == []
