"""Hair colour read around a face: the head's region clustered, less backdrop and skin, named as hair is."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from PIL import Image, ImageDraw

from hydra_vr.api import choose, garments, hair
from hydra_vr.api.types import Box, Detection

SKY, SKIN = (150, 190, 235), (228, 182, 150)
FACE = (60, 70, 120, 140)  # x1, y1, x2, y2: a face detector's box, brow to chin


def _portrait(hair_rgb: tuple[int, int, int] | None, top: int = 0) -> Image.Image:
    """A head on a sky backdrop: a skin-coloured face and forehead, hair over them (none: bald), shifted up by ``top``."""
    img = Image.new("RGB", (180, 200), SKY)
    d = ImageDraw.Draw(img)
    d.ellipse((50, 35 - top, 130, 150 - top), fill=SKIN)  # forehead and face
    if hair_rgb is not None:
        d.pieslice((45, 25 - top, 135, 105 - top), 180, 360, fill=hair_rgb)  # a cap of hair down to the brow
        rng = np.random.default_rng(0)
        arr = np.asarray(img).astype(np.int16)
        arr += rng.integers(-6, 7, arr.shape, dtype=np.int16)  # strands: a little noise, as in a photo
        img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    return img


@pytest.mark.parametrize(("rgb", "name"), [
    ((30, 26, 24), "black"), ((100, 70, 48), "brown"), ((214, 180, 120), "blonde"),
    ((170, 80, 42), "red"), ((168, 166, 163), "gray"),
])
def test_the_hair_around_a_face_is_named_as_hair_is(rgb: tuple[int, int, int], name: str) -> None:
    reading = hair.read_hair(_portrait(rgb), FACE)
    assert reading is not None and reading.name == name
    assert all(abs(a - b) <= 12 for a, b in zip(reading.rgb, rgb))  # the hair's own pixels: not the sky, not the skin


def test_a_bald_head_has_no_hair_reading() -> None:
    assert hair.read_hair(_portrait(None), FACE) is None  # above the face: forehead skin, then sky


def test_a_region_cut_by_the_photos_top_still_reads_the_hair() -> None:
    face = (FACE[0], FACE[1] - 30, FACE[2], FACE[3] - 30)
    reading = hair.read_hair(_portrait((30, 26, 24), top=30), face)
    assert reading is not None and reading.name == "black"


def test_the_head_region_surrounds_the_top_of_the_face_inside_the_photo() -> None:
    region = hair.head_region((100, 100, 160, 170), (400, 300))
    assert region is not None
    x1, y1, x2, y2 = region
    assert x1 < 100 and x2 > 160 and y1 < 100 and 100 < y2 < 170  # beside and above the face, not its chin
    assert hair.head_region((100, 150, 160, 220), (130, 300))[2] == 130  # clipped to the photo
    assert hair.head_region((100, 2, 160, 72), (400, 300)) is None  # a face at the very top: no room for hair above it


@pytest.mark.parametrize(("rgb", "name"), [
    ((12, 10, 10), "black"), ((60, 42, 30), "brown"), ((150, 120, 85), "blonde"),  # as photos show them: shadowed
    ((150, 70, 40), "red"), ((130, 128, 126), "gray"), ((215, 205, 195), "white"),
])
def test_shades_are_named_as_hair_is(rgb: tuple[int, int, int], name: str) -> None:
    assert hair.shade_name(rgb) == name


@pytest.mark.parametrize(("phrase", "means"), [("hair", True), ("long hair", True), ("hairs", True),
                                                ("beard", False), ("hat", False), (None, False)])
def test_which_phrases_name_hair(phrase: str | None, means: bool) -> None:
    assert hair.names_hair(phrase) is means


def test_a_choice_option_that_says_the_reading() -> None:
    assert hair.option_named(("blond", "dark"), "blonde") == "blond"
    assert hair.option_named(("grey", "black"), "gray") == "grey"
    assert hair.option_named(("short", "long"), "brown") is None


@pytest.mark.parametrize(("text", "worn"), [
    ("the toddler with blond hair", ("hair", ("blonde",))),
    ("the lady with the long grey hair", ("hair", ("gray",))),
    ("the boy with ginger hair and a green scarf", ("hair", ("red",))),  # the scarf's colour is not the hair's
    ("the boy in the green scarf", ("neck", ("green",))),  # no hair named: the garment's colour, as before
])
def test_a_description_by_hair_colour(text: str, worn: tuple[str, tuple[str, ...]]) -> None:
    assert garments.worn_colors(text) == worn


def test_choose_picks_the_person_whose_hair_the_description_names() -> None:
    left, right = _portrait((214, 180, 120)), _portrait((30, 26, 24))  # fair hair, then dark
    photo = Image.new("RGB", (360, 260), SKY)  # the portraits' heads, their bodies below
    photo.paste(left, (0, 0))
    photo.paste(right, (180, 0))
    people = [[0, 0, 180, 260], [180, 0, 360, 260]]
    faces = [list(FACE), [FACE[0] + 180, FACE[1], FACE[2] + 180, FACE[3]]]

    def crops() -> list[Image.Image]:
        return [photo.crop(tuple(b)) for b in people]

    for text, want in (("the girl with blonde hair", 0), ("the man with black hair", 1), ("the man with red hair", None)):
        told = choose.cue(text)
        assert told is not None and told.worn is not None and told.worn[0] == "hair"
        assert choose.choose(told, people, crops, lambda name: faces if name == "face" else []) == want
    assert choose.choose(choose.cue("the girl with blonde hair"), people, crops, lambda name: []) is None  # no face


class _Fixed:
    """A detector and a face detector that find fixed boxes (fake tools: this tests what describe does with them)."""

    def __init__(self, label: str, box: Sequence[float]) -> None:
        self.label, self.box = label, box

    def detect_classes(self, image: Image.Image) -> list[Detection]:
        return [Detection(Box(*self.box), self.label, 0.9, "fake")]

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        return [d for d in self.detect_classes(image) if d.label in queries]

    def detect_faces(self, image: Image.Image) -> list[Detection]:
        return self.detect_classes(image)


def _describe(reply: str):
    """The describe backend over the fixed person and face boxes, its LLM a script that says ``reply``."""
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import HydraConfig
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.question import parse

    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _Fixed("person", (35, 15, 145, 200))
    tb._backends["faces"] = _Fixed("face", FACE)
    chat = ScriptedChat(responses=[f'{{"answer": "{reply}"}}'])
    return DescribeVQA(ToolContext(toolbox=tb, llm=lambda: chat, read_question=parse)), chat


@pytest.mark.parametrize(("question", "answer"), [
    ("What colour is her hair?", "blonde"),  # a possessive pronoun opens the frame's subject
    ("What colour is the toddler's hair?", "blonde"),
    ("Is his hair blond or dark?", "blond"),  # the option that says the reading, as written
])
def test_describe_answers_a_hair_question_with_the_hair_read_around_the_face(question: str, answer: str) -> None:
    describe, chat = _describe("pink")
    got = describe.answer(_portrait((214, 180, 120)), question)
    assert (got.text, got.source) == (answer, "describe:hair") and chat.calls == []
    assert "named as hair is: blonde" in got.evidence


def test_a_garment_question_not_about_hair_is_left_to_the_findings() -> None:
    """Its worn findings carry no hair reading (the template renders them without one) and the LLM answers."""
    describe, chat = _describe("black")
    got = describe.answer(_portrait((214, 180, 120)), "What colour is the toddler's cap?")
    assert got.source == "describe" and len(chat.calls) == 1
    assert "head at" in got.evidence and "named as hair is" not in got.evidence
