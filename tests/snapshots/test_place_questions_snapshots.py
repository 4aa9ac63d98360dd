"""Place questions answered from boxes: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_place_questions.py.
"""

from __future__ import annotations

import pytest
from PIL import Image

from hydra_vr.answer_types import asked_place
from hydra_vr.api.where import answer_place, locate


def _place(look, image, question: str):
    """The answer the boxes give to ``question`` as the toolbox asks them: its parsed place, if any."""
    asked = asked_place(question)
    return answer_place(look, image, asked) if asked is not None else None


@pytest.fixture(scope="module")
def rgb(photo):
    return lambda name: Image.open(photo(name)).convert("RGB")


def test_the_tools_place_what_they_find_on_real_photos(embedded_toolbox, rgb):
    look = embedded_toolbox.look_for
    # the pagoda is found through the classifier's map; its box lies left of the middle
    said, why = _place(look, rgb("china"), "Is the tower on the left or the right side of the photo?")
    assert said == "left" and "find('tower')" in why
    assert _place(look, rgb("rocket"), "Is the rocket in the middle or at the edge of the photo?")[0] == "middle"
    # both men told apart by the colour of their coats (api.choose), then compared
    said, why = _place(look, rgb("bus"), "Is the man in the beige coat to the left or to the right of the man in the black coat?")
    assert said == "left" and "man in the black coat at" in why
    said, _ = _place(look, rgb("bus"), "Is the man in the black coat to the left or to the right of the man in the beige coat?")
    assert said == "right"


def test_the_tools_leave_what_they_cannot_tell_to_the_backend(embedded_toolbox, rgb):
    look = embedded_toolbox.look_for
    # two men, nothing tells which is bald, and the question asks which of them, not the photo's side
    assert _place(look, rgb("zidane"), "Is the bald man on the left or on the right?") is None
    # an ordinal among things find() lists by score
    assert _place(look, rgb("flower"), "Is the second, partly hidden flower at the top or at the bottom of the photo?") is None
    # nothing can look for a flag there
    assert _place(look, rgb("astronaut"), "Is the flag on the left or the right side of the photo?") is None
    assert _place(look, rgb("bus"), "Is it sunny or cloudy?") is None
    assert locate(look, rgb("zidane"), "bald man").boxes and len(locate(look, rgb("zidane"), "bald man").boxes) == 2
