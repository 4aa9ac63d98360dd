"""Focus questions answered from pixels (api.focus) on real photos, through the toolbox (no LLM)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter

from hydra_vr.api import focus


def _open(photo, name: str) -> Image.Image:
    return Image.open(photo(name)).convert("RGB")


def test_blurring_the_border_of_a_sharp_photo_turns_its_background_blurry(photo) -> None:
    bus = _open(photo, "bus")
    assert focus.background_focus(bus).verdict == "sharp"
    blurred = bus.filter(ImageFilter.GaussianBlur(6))
    w, h = bus.size
    inner = (w // 8, h // 8, w - w // 8, h - h // 8)
    blurred.paste(bus.crop(inner), inner[:2])  # the middle kept sharp, the border ring out of focus
    measured = focus.background_focus(blurred)
    assert measured is not None and measured.verdict == "blurry" and measured.share < 0.3


def test_edge_energy_grows_with_detail() -> None:
    rng = np.random.default_rng(0)
    noise = Image.fromarray(rng.integers(0, 255, (256, 256), dtype=np.uint8)).convert("RGB")
    sharp, _ = focus.detail_tiles(noise)
    soft, _ = focus.detail_tiles(noise.filter(ImageFilter.GaussianBlur(3)))
    assert float(np.median(soft)) < 0.3 * float(np.median(sharp))


def _ringed(photo) -> Image.Image:
    """The photo with its border ring out of focus and its middle sharp."""
    sharp = _open(photo, "bus")
    ringed = sharp.filter(ImageFilter.GaussianBlur(6))
    w, h = sharp.size
    inner = (w // 8, h // 8, w - w // 8, h - h // 8)
    ringed.paste(sharp.crop(inner), inner[:2])
    return ringed


class _AskedTheLLM(Exception):
    pass


def _no_llm():
    raise _AskedTheLLM  # the describe VQA backend needs the LLM: a question it gets ends here


def test_simple_query_answers_the_focus_the_question_frame_reads(photo) -> None:
    import pytest

    from hydra_vr.api import VisionToolbox
    from hydra_vr.question import parse

    ringed = _ringed(photo)
    tools = VisionToolbox(llm=_no_llm, read_question=parse)
    told = tools.simple_query(ringed, "Is the scenery behind it out of focus?")
    assert (told.text, told.source) == ("yes", "focus")
    assert tools.simple_query(ringed, "Would you call the backdrop sharp or fuzzy?").text == "fuzzy"
    # options of several words are the measure's too: the answer is the option as the question words it
    assert tools.simple_query(ringed, "Is the scenery behind it in focus or out of focus?").text == "out of focus"
    # a negated question is not the frame's focus question: the measure does not answer it the other way round
    with pytest.raises(_AskedTheLLM):
        tools.simple_query(ringed, "Is the background not blurred?")
    with pytest.raises(_AskedTheLLM):  # a toolbox told nothing of questions leaves them to the backend
        VisionToolbox(llm=_no_llm).simple_query(ringed, "Is the scenery behind it out of focus?")
