"""Which way up a thing's text is: asked in the frame, measured by PP-OCR's line classifier, answered before the LLM."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw, ImageFont

from hydra_vr.api.orientation import answer_orientation, orientation_of
from hydra_vr.question import parse


@pytest.mark.parametrize(("question", "claims"), [
    ("Is the menu upside down?", {"yes": "upside down", "no": "upright"}),
    ("Is the road sign the right way up?", {"yes": "upright", "no": "upside down"}),
    ("Is the poster upright or upside down?", {"upright": "upright", "upside down": "upside down"}),
])
def test_the_frame_says_what_each_answer_claims_of_the_way_up(question: str, claims: dict) -> None:
    assert dict(parse(question).orientation.claims) == claims


@pytest.mark.parametrize("question", ["Is the menu not upside down?", "Is the man upright?", "Is the menu blurry?"])
def test_other_questions_ask_no_way_up(question: str) -> None:
    assert parse(question).orientation is None


def test_two_thirds_of_the_lines_decide() -> None:
    assert orientation_of([("a", True), ("b", True), ("c", False)]) == "upside down"
    assert orientation_of([("a", True), ("b", False)]) is None
    assert orientation_of([]) is None
    asked = parse("Is the menu upside down?").orientation
    assert answer_orientation([("OPEN", False), ("DAILY", False)], asked)[0] == "no"


def _card() -> Image.Image:
    """A white card with three lines of large black print."""
    card = Image.new("RGB", (900, 420), "white")
    draw = ImageDraw.Draw(card)
    font = ImageFont.load_default(size=64)
    for i, line in enumerate(("FRESH BREAD", "OPEN DAILY", "SINCE 1921")):
        draw.text((60, 50 + 120 * i), line, fill="black", font=font)
    return card


def test_printed_lines_turned_half_a_turn_are_read_upside_down(embedded_toolbox) -> None:
    card = _card()
    got = embedded_toolbox.simple_query(card.rotate(180), "Is the writing upside down?")
    assert (got.text, got.source) == ("yes", "orientation")
    got = embedded_toolbox.simple_query(card, "Is the writing upside down?")
    assert (got.text, got.source) == ("no", "orientation")
