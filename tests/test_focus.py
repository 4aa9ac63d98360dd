"""Focus questions answered from pixels (api.focus) on real photos, through the toolbox (no LLM)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageFilter

from hydra_vr.api import focus


def _open(photo, name: str) -> Image.Image:
    return Image.open(photo(name)).convert("RGB")


@pytest.mark.parametrize("name, question, answer", [
    ("flower", "Is the background sharp or blurry?", "blurry"),  # the dahlia's leaves far out of focus: 9%
    ("zidane", "Is the crowd behind them sharp or blurry?", "blurry"),  # 14%
    ("chelsea", "Is the background in focus?", "no"),
    ("bus", "Is the background blurry?", "no"),  # the street behind the bus: 61%
    ("china", "Is the background sharp or blurred?", "sharp"),
    ("bus", "Is the bus in focus?", "yes"),  # a thing find() locates: its own tiles
])
def test_focus_questions_are_answered_from_the_photo(embedded_toolbox, photo, name, question, answer) -> None:
    said = focus.answer_focus(embedded_toolbox.look_for, _open(photo, name), question)
    assert said is not None and said[0] == answer, said
    assert "% of the sharpest part's" in said[1]


def test_a_plain_backdrop_or_a_question_on_no_region_is_left_to_the_backend(embedded_toolbox, photo) -> None:
    # Grace Hopper's plain blue backdrop and dark uniform hold no detail to lose: they tell neither
    assert focus.answer_focus(embedded_toolbox.look_for, _open(photo, "grace_hopper"), "Is the background sharp or blurry?") is None
    assert focus.answer_focus(embedded_toolbox.look_for, _open(photo, "coffee"), "What is blurry?") is None  # no region
    assert focus.answer_focus(embedded_toolbox.look_for, _open(photo, "bus"), "Is the bus blue or white?") is None
    assert focus.answer_focus(embedded_toolbox.look_for, _open(photo, "bus"), "What is blurry?") is None
    # sharp, clear, fuzzy alone speak of an edge, a glass, fur: only set against blurry do they mean focus
    assert focus.answer_focus(embedded_toolbox.look_for, _open(photo, "chelsea"), "Is the cat fuzzy?") is None
    assert focus.answer_focus(embedded_toolbox.look_for, _open(photo, "bus"), "Is the bus clear?") is None


def test_blurring_the_border_of_a_sharp_photo_turns_its_background_blurry(photo) -> None:
    bus = _open(photo, "bus")
    assert focus.background_focus(bus).verdict == "sharp"
    blurred = bus.filter(ImageFilter.GaussianBlur(6))
    w, h = bus.size
    inner = (w // 8, h // 8, w - w // 8, h - h // 8)
    blurred.paste(bus.crop(inner), inner[:2])  # the middle kept sharp, the border ring out of focus
    measured = focus.background_focus(blurred)
    assert measured is not None and measured.verdict == "blurry" and measured.share < 0.3


def test_the_toolbox_answers_focus_before_any_vqa_backend(embedded_toolbox, photo) -> None:
    flower = _open(photo, "flower")
    ans = embedded_toolbox.simple_query(flower, "Is the background sharp or blurry?")
    assert (ans.text, ans.source) == ("blurry", "focus")
    verdict, evidence = embedded_toolbox.verify_property(flower, "background", "blurry")
    assert verdict is True and "of the sharpest part's" in evidence
    verdict, _ = embedded_toolbox.verify_property(flower, "background", "in focus")
    assert verdict is False


def test_edge_energy_grows_with_detail() -> None:
    rng = np.random.default_rng(0)
    noise = Image.fromarray(rng.integers(0, 255, (256, 256), dtype=np.uint8)).convert("RGB")
    sharp, _ = focus.detail_tiles(noise)
    soft, _ = focus.detail_tiles(noise.filter(ImageFilter.GaussianBlur(3)))
    assert float(np.median(soft)) < 0.3 * float(np.median(sharp))
