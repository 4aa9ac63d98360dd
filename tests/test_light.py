"""The photo's light from its pixels (api.light), the frame's light questions, and the toolbox answering them
before any VQA backend. Phrasings are our own; scenes are drawn, and a real photo is darkened into a night."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance

from hydra_vr.api.light import answer_light, measure_light
from hydra_vr.lexicon.wordnet import light_pole
from hydra_vr.question import parse


def _scene(sky: tuple[int, int, int], ground: tuple[int, int, int], clouds: float = 0.0, lamps: int = 0) -> Image.Image:
    """A 320x240 scene: sky in the top 40%, ground below; ``clouds``: the share of the top third painted white;
    ``lamps``: bright discs on the ground."""
    img = Image.new("RGB", (320, 240), ground)
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, 319, 95], fill=sky)
    if clouds:
        draw.rectangle([0, 0, int(320 * clouds) - 1, 79], fill=(236, 236, 238))
    rng = np.random.default_rng(3)
    for x, y in rng.integers([10, 110], [310, 230], size=(lamps, 2)):
        draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill=(255, 244, 214))
    return img


BLUE_SKY, GREY_SKY, NIGHT_SKY = (92, 150, 222), (182, 186, 190), (14, 20, 44)


@pytest.mark.parametrize(("word", "pole"), [
    ("daytime", "day"), ("nighttime", "night"), ("sunny", "sunny"), ("cloudless", "sunny"), ("overcast", "overcast"),
    ("stormy", "overcast"), ("snowing", "overcast"), ("foggy", "overcast"), ("windy", None), ("kettle", None), ("red", None),
])
def test_wordnet_names_the_light_a_word_asks_for(word: str, pole: str | None) -> None:
    assert light_pole(word) == pole


def test_the_frame_reads_light_questions_about_the_scene_only() -> None:
    light = parse("Was this shot taken at night or during the day?").light
    assert light is not None and light.measure == "time" and light.claim("night") == "night"
    light = parse("Would you say the weather is sunny or stormy?").light
    assert light is not None and light.measure == "sky" and dict(light.claims) == {"sunny": "sunny", "stormy": "overcast"}
    assert dict(parse("Is it snowing here?").light.claims) == {"yes": "overcast", "no": "sunny"}
    assert dict(parse("Is it a foggy afternoon?").light.claims)["yes"] == "overcast"
    # about a thing, not the scene; negated; two words of the same pole
    for question in ("Is the lake clear or cloudy?", "Is the corridor dark?", "Is it not nighttime?", "Is it foggy or rainy?"):
        assert parse(question).light is None, question


def test_blue_sky_is_day_and_sun_and_a_dark_scene_with_lamps_is_night() -> None:
    clear = measure_light(_scene(BLUE_SKY, (120, 110, 90)))
    assert (clear.time, clear.sky) == ("day", "clear")
    night = measure_light(_scene(NIGHT_SKY, (30, 28, 26), lamps=25))
    assert (night.time, night.sky) == ("night", None)
    grey = measure_light(_scene(GREY_SKY, (110, 110, 105)))
    assert (grey.time, grey.sky) == ("day", None)  # a grey sky says day, and nothing of cloud or a wall
    cloudy_blue = measure_light(_scene(BLUE_SKY, (120, 110, 90), clouds=0.6))
    assert cloudy_blue.sky == "sunny" and cloudy_blue.pale_sky > 0.3


def test_answers_come_only_from_a_clear_measure() -> None:
    ask = lambda img, q: answer_light(img, parse(q).light)
    sunny = _scene(BLUE_SKY, (120, 110, 90), clouds=0.6)
    assert ask(sunny, "Would you say the weather is sunny or stormy?")[0] == "sunny"
    assert ask(sunny, "Is the sky overcast?") is None  # clouds over part of a blue sky: a yes/no is not decided
    assert ask(_scene(BLUE_SKY, (120, 110, 90)), "Is it snowing here?")[0] == "no"
    assert ask(_scene(GREY_SKY, (110, 110, 105)), "Would you say the weather is sunny or stormy?") is None
    night = _scene(NIGHT_SKY, (30, 28, 26), lamps=25)
    answer, evidence = ask(night, "Was this shot taken at night or during the day?")
    assert answer == "night" and "median brightness" in evidence
    assert ask(night, "Is it daytime here?")[0] == "no"


def test_a_real_photo_darkened_to_night_reads_night(photo) -> None:
    real = Image.open(photo("bus")).convert("RGB")
    assert measure_light(real).time == "day"
    dusk = ImageEnhance.Brightness(real).enhance(0.3)
    assert measure_light(dusk).time == "night"


class _AskedTheLLM(Exception):
    pass


def _no_llm():
    raise _AskedTheLLM


def test_simple_query_answers_the_light_the_frame_reads_before_the_backend() -> None:
    from hydra_vr.api import VisionToolbox
    from hydra_vr.api.types import Box
    from hydra_vr.memory.textualizer import textualize_call

    tools = VisionToolbox(llm=_no_llm, read_question=parse)
    night = _scene(NIGHT_SKY, (30, 28, 26), lamps=25)
    with tools.recording() as calls:
        told = tools.simple_query(night, "Was this shot taken at night or during the day?")
    assert (told.text, told.source) == ("night", "light")
    assert "median brightness" in textualize_call(calls[-1])
    with pytest.raises(_AskedTheLLM):  # not clear: the backend answers
        tools.simple_query(_scene(GREY_SKY, (110, 110, 105)), "Would you say the weather is sunny or stormy?")
    with pytest.raises(_AskedTheLLM):  # a patch's crop is not the photo: its light is not the scene's
        tools.simple_query(night.crop((0, 0, 100, 100)), "Was this shot taken at night or during the day?",
                           box=Box(0, 0, 100, 100), photo_size=night.size)


def test_an_answer_the_light_measure_contradicts_is_refused_and_the_measure_answers() -> None:
    from hydra_vr.agent import checks
    from hydra_vr.api.types import Answer, ToolCallRecord

    def replied(img: Image.Image, question: str) -> ToolCallRecord:
        text, evidence = answer_light(img, parse(question).light)
        return ToolCallRecord("simple_query", {"question": question}, Answer(text, "light", evidence), 1.0)

    night = replied(_scene(NIGHT_SKY, (30, 28, 26), lamps=25), "Is it daytime here?")
    frame = parse("Was this shot taken at night or during the day?")
    assert checks.run_check("against_light", "day", checks.Evidence([night]), frame) is not None
    assert checks.run_check("against_light", "night", checks.Evidence([night]), frame) is None
    assert checks.measured_answer(frame, [night]) == ("night", "against_light")
    # a trace's dict carries the same; a blue sky seen in part only does not decide a yes/no about cloud
    as_dict = ToolCallRecord("simple_query", night.args, night.result.to_dict(), 1.0)
    assert checks.run_check("against_light", "day", checks.Evidence([as_dict]), frame) is not None
    partly = replied(_scene(BLUE_SKY, (120, 110, 90), clouds=0.6), "Would you say the weather is sunny or stormy?")
    assert checks.run_check("against_light", "yes", checks.Evidence([partly]), parse("Is the sky overcast?")) is None
    clear = replied(_scene(BLUE_SKY, (120, 110, 90)), "Would you say the weather is sunny or stormy?")
    assert checks.run_check("against_light", "yes", checks.Evidence([clear]), parse("Is the sky overcast?")) is not None
