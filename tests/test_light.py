"""The light of a photo from its pixels (api.light): day, night, a clear sky; phrasings of this test's own."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from hydra_vr.api.light import answer_light, measure_light
from hydra_vr.question import parse


def _scene(sky: tuple[int, int, int] | None, ground_level: int = 120, night: bool = False) -> Image.Image:
    """A 200x150 photo: a smooth sky over the top third (``sky``; None: a busy, textured top) above textured ground."""
    rng = np.random.default_rng(0)
    px = rng.integers(0, 60, (150, 200, 3)) + ground_level  # textured ground
    if sky is None:
        px[:50] = rng.integers(0, 256, (50, 200, 3))  # leaves, a crowd: edges everywhere
    else:
        px[:50] = np.array(sky) + rng.integers(-3, 4, (50, 200, 3))
    if night:
        px = (px * 0.15).astype(int)
        px[100:104, 40:44] = 255  # a street lamp
    return Image.fromarray(np.clip(px, 0, 255).astype(np.uint8))


def test_a_bright_blue_sky_is_a_clear_day() -> None:
    light = measure_light(_scene((90, 150, 235)))
    assert (light.period, light.sky) == ("day", "clear")


def test_a_white_sky_is_day_but_says_nothing_of_clouds() -> None:
    light = measure_light(_scene((240, 240, 242)))
    assert (light.period, light.sky) == ("day", None)


def test_a_photo_dark_all_over_is_night() -> None:
    light = measure_light(_scene((20, 25, 40), night=True))
    assert (light.period, light.sky) == ("night", None)


@pytest.mark.parametrize("top", [None, (210, 140, 60)])  # a busy top, a warm lit wall
def test_no_sky_along_the_top_tells_neither(top) -> None:
    assert measure_light(_scene(top)).period is None


def test_answers_come_from_the_frames_light_claims() -> None:
    clear = _scene((90, 150, 235))
    assert answer_light(clear, parse("Is it nighttime or daytime?").light)[0] == "daytime"
    assert answer_light(clear, parse("Does the weather look sunny?").light)[0] == "yes"
    assert answer_light(clear, parse("Is it overcast?").light)[0] == "no"
    assert answer_light(_scene((240, 240, 242)), parse("Is it cloudy or sunny?").light) is None  # white: not told
    assert answer_light(_scene((20, 25, 40), night=True), parse("Was the shot taken at night?").light)[0] == "yes"


@pytest.mark.parametrize("question", ["Is the kitchen dark?", "Is the pond water clear?", "Is it not sunny?",
                                      "What colour is the evening dress?"])
def test_a_things_look_or_a_negation_is_no_light_question(question: str) -> None:
    assert parse(question).light is None


class _AskedTheLLM(Exception):
    pass


def _no_llm():
    raise _AskedTheLLM


def test_simple_query_answers_the_light_of_the_whole_photo_only(photo) -> None:
    from hydra_vr.api import VisionToolbox
    from hydra_vr.api.types import Box

    tools = VisionToolbox(llm=_no_llm, read_question=parse)
    clear = _scene((90, 150, 235))
    told = tools.simple_query(clear, "Is it daytime or nighttime?")
    assert (told.text, told.source) == ("daytime", "light") and "bright blue" in told.evidence
    with pytest.raises(_AskedTheLLM):  # a patch's top is no sky
        tools.simple_query(clear.crop((0, 100, 200, 150)), "Is it daytime or nighttime?", box=Box(0, 100, 200, 150))
    # a real photo under a white sky: day
    assert tools.simple_query(Image.open(photo("china")).convert("RGB"), "Was it shot by day or at night?").text == "day"
