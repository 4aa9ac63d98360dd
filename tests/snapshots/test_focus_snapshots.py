"""Focus questions answered from pixels (api.focus): snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_focus.py.
"""

from __future__ import annotations

import pytest

from hydra_vr.api import focus as focus_ops
from hydra_vr.question import parse
from tests.test_focus import _open


def _focus(look_for, image, question: str):
    """The answer the pixels give to ``question`` as the toolbox asks them: its frame's focus, if any."""
    asked = parse(question).focus
    return focus_ops.answer_focus(look_for, image, question, asked) if asked is not None else None


@pytest.mark.parametrize("name, question, answer", [
    ("flower", "Is the background sharp or blurry?", "blurry"),  # the dahlia's leaves far out of focus: 9%
    ("zidane", "Is the crowd behind them sharp or blurry?", "blurry"),  # 14%
    ("chelsea", "Is the background in focus?", "no"),
    ("bus", "Is the background blurry?", "no"),  # the street behind the bus: 61%
    ("china", "Is the background sharp or blurred?", "sharp"),
    ("bus", "Is the bus in focus?", "yes"),  # a thing find() locates: its own tiles
])
def test_focus_questions_are_answered_from_the_photo(embedded_toolbox, photo, name, question, answer) -> None:
    said = _focus(embedded_toolbox.look_for, _open(photo, name), question)
    assert said is not None and said[0] == answer, said
    assert "% of the sharpest part's" in said[1]


def test_a_plain_backdrop_or_a_question_on_no_region_is_left_to_the_backend(embedded_toolbox, photo) -> None:
    # Grace Hopper's plain blue backdrop and dark uniform hold no detail to lose: they tell neither
    assert _focus(embedded_toolbox.look_for, _open(photo, "grace_hopper"), "Is the background sharp or blurry?") is None
    assert _focus(embedded_toolbox.look_for, _open(photo, "coffee"), "What is blurry?") is None  # no region
    assert _focus(embedded_toolbox.look_for, _open(photo, "bus"), "Is the bus blue or white?") is None
    assert _focus(embedded_toolbox.look_for, _open(photo, "bus"), "What is blurry?") is None
    # sharp, clear, fuzzy alone speak of an edge, a glass, fur: only set against blurry do they mean focus
    assert _focus(embedded_toolbox.look_for, _open(photo, "chelsea"), "Is the cat fuzzy?") is None
    assert _focus(embedded_toolbox.look_for, _open(photo, "bus"), "Is the bus clear?") is None


def test_the_toolbox_answers_focus_before_any_vqa_backend(embedded_toolbox, photo) -> None:
    flower = _open(photo, "flower")
    ans = embedded_toolbox.simple_query(flower, "Is the background sharp or blurry?")
    assert (ans.text, ans.source) == ("blurry", "focus")
    verdict, evidence = embedded_toolbox.verify_property(flower, "background", "blurry")
    assert verdict is True and "of the sharpest part's" in evidence
    verdict, _ = embedded_toolbox.verify_property(flower, "background", "in focus")
    assert verdict is False
