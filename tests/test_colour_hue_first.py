"""A colour answer about a thing measured on its own pixels: a hue with a fair share outranks black, white and gray."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from hydra_vr.api.backends.describe import _chromatic_first, _colors_seen


def _seen(*colours: str) -> tuple[str, ...]:
    return _colors_seen({"relevant": [{"label": "kite", "colors": list(colours)}]})


def test_a_hue_over_the_floor_is_the_answer_beside_shade() -> None:
    seen = _seen("black 61%", "green 27%", "white 9%")
    assert "green" in seen
    assert "black" not in seen and "white" not in seen


def test_black_white_and_gray_answer_when_no_hue_holds_a_fair_share() -> None:
    assert _seen("gray 70%", "yellow 12%", "black 11%") == ("gray", "grey", "silver")


def test_a_thing_whose_first_colour_is_a_hue_keeps_all_its_colours() -> None:
    seen = _seen("purple 45%", "black 30%", "white 20%")
    assert {"purple", "black", "white"} <= set(seen)


def test_brown_is_no_shade_of_a_hue() -> None:
    assert _chromatic_first(["white 50%", "brown 30%"], 0.2) == ["white 50%", "brown 30%"]
    assert _chromatic_first(["brown 50%", "red 30%", "black 20%"], 0.2) == ["brown 50%", "red 30%", "black 20%"]


def test_a_garment_worn_is_named_by_its_hue_too() -> None:
    people = [{"person": [0, 0, 50, 100], "colors": ["black 52%", "red 31%"]}]
    seen = _colors_seen({"relevant": [], "worn": {"people": people, "placed": True}})
    assert "red" in seen and "black" not in seen


def test_colours_measured_off_the_named_thing_are_left_as_they_are() -> None:
    # the whole patch's colours (no object named): mostly backdrop, no reason to prefer its hue
    seen = _colors_seen({"relevant": [], "colors": ["gray 50%", "blue 30%"]})
    assert {"gray", "blue"} <= set(seen)


@pytest.mark.parametrize("hue", [(40, 90, 210), (220, 40, 40)])
def test_measured_pixels_of_a_shaded_thing_answer_its_hue(hue: tuple[int, int, int]) -> None:
    from hydra_vr.api import colors as color_ops
    from hydra_vr.api.backends.describe import _named

    # a canopy whose lower half lies in deep shade: the shade reads black and holds more of the pixels
    thing = Image.new("RGB", (120, 120), (12, 12, 14))
    ImageDraw.Draw(thing).rectangle((0, 0, 119, 44), fill=hue)
    shares = _named(color_ops.read_colors(thing).shares(top_k=3))
    assert shares[0].startswith("black")
    named = color_ops.BASE_COLORS[int(color_ops.pixel_names(np.array([[hue]], dtype=np.uint8))[0, 0])]
    seen = _colors_seen({"relevant": [{"label": "umbrella", "colors": shares}]})
    assert named in seen and "black" not in seen
