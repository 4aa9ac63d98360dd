"""The colour of a part of a thing (the frame's subject and whole): measured on the whole, small shares kept."""

from __future__ import annotations

import json

import pytest
from PIL import Image, ImageDraw

from hydra_vr.lexicon import wordnet as wn


@pytest.mark.parametrize(("word", "part"), [
    ("tongue", True), ("handle", True), ("roof", True), ("wheel", True),
    ("dog", False), ("umbrella", False), ("kite", False),
])
def test_wordnet_says_what_is_a_part(word: str, part: bool) -> None:
    assert wn.is_part(word) is part


@pytest.mark.parametrize(("part", "whole", "expected"), [
    ("cab", "lorry", True), ("keyboard", "laptop", True), ("handle", "mug", True), ("tongue", "cat", True),
    ("necktie", "man", False), ("kettle", "stove", False),
])
def test_wordnet_says_what_is_a_part_of_what(part: str, whole: str, expected: bool) -> None:
    assert wn.part_of(part, whole) is expected


@pytest.mark.parametrize(("question", "classes"), [
    ("What colour is the lorry's cab?", set()),  # the driver's compartment: not the mapper's taxi (car)
    ("What colour is the laptop's keyboard?", {"keyboard"}),  # a part that is a class of its own stays one
    ("What colour is the cab?", {"car"}),  # no whole named: the word's everyday sense
])
def test_a_part_stands_only_for_detector_classes_of_its_own_kind(question: str, classes: set[str]) -> None:
    from hydra_vr.api.backends.coco import CocoNameMapper
    from hydra_vr.api.backends.describe import _subject_classes
    from hydra_vr.question import parse

    assert _subject_classes(parse(question), CocoNameMapper()) == classes


def _describe(toolbox, replies: list[str]):
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.question import parse

    chat = ScriptedChat(responses=[json.dumps({"answer": r}) for r in replies])
    return DescribeVQA(ToolContext(toolbox=toolbox, llm=lambda: chat, read_question=parse)), chat


def _robot() -> Image.Image:
    """A program's crop of a grey robot with a small pink button (2% of it)."""
    from hydra_vr.api.types import mark_object_crop

    robot = Image.new("RGB", (200, 200), (128, 128, 130))
    ImageDraw.Draw(robot).ellipse((90, 90, 118, 118), fill=(250, 120, 190))
    return mark_object_crop(robot)


def test_a_part_may_have_a_small_share_of_its_wholes_colours(embedded_toolbox) -> None:
    d, chat = _describe(embedded_toolbox, ["pink"])
    got = d.answer(_robot(), "What colour is the robot's button?")
    assert got.text == "pink"
    assert "pink" in chat.calls[0].json_schema["properties"]["answer"]["enum"]
    assert "The question asks about the button of the robot" in chat.calls[0].last_user


def test_a_whole_no_tool_located_gives_no_part_colours(embedded_toolbox) -> None:
    scene = _robot().copy()  # the same pixels as a whole photo: no detection and no program's crop of the robot
    scene.info.clear()
    d, chat = _describe(embedded_toolbox, ["pink"])
    d.answer(scene, "What colour is the robot's button?")
    assert "no tool locates" not in chat.calls[0].last_user


def test_a_detected_whole_is_where_its_part_is_measured(embedded_toolbox, photo) -> None:
    cat = Image.open(photo("chelsea")).convert("RGB")
    d, chat = _describe(embedded_toolbox, ["black"])
    d.answer(cat, "What colour is the cat's ear?")
    assert "The question asks about the ear of the cat" in chat.calls[0].last_user
    # the thing asked about found by the detector itself answers with its own colours, as before
    d, chat = _describe(embedded_toolbox, ["orange"])
    d.answer(cat, "What colour is the cat of the photo?")
    assert "no tool locates" not in chat.calls[0].last_user


class _FindsByName:
    """A detector whose class listing misses the thing that a search by its name finds (a fake tool: this tests where
    the colour is measured, not detection)."""

    def __init__(self, name: str, box: list[float]) -> None:
        self.name, self.box = name, box

    def detect_classes(self, image: Image.Image) -> list:
        return []

    def detect(self, image: Image.Image, queries) -> list:
        from hydra_vr.api.types import Box, Detection

        return [Detection(Box(*self.box), self.name, 0.6, "fake", query=q) for q in queries if q == self.name]


def _scene() -> Image.Image:
    """A blue wall over most of the photo and a small yellow disc low on the right."""
    scene = Image.new("RGB", (400, 300), (40, 70, 190))
    ImageDraw.Draw(scene).rectangle((0, 220, 400, 300), fill=(90, 90, 90))
    ImageDraw.Draw(scene).ellipse((300, 200, 350, 250), fill=(240, 210, 30))
    return scene


def test_a_thing_the_listing_misses_is_measured_where_the_search_finds_it() -> None:
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import HydraConfig

    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _FindsByName("frisbee", [296.0, 196.0, 354.0, 254.0])
    d, chat = _describe(tb, ["yellow"])
    got = d.answer(_scene(), "What colour is the frisbee?")
    assert got.text == "yellow"
    enum = chat.calls[0].json_schema["properties"]["answer"]["enum"]
    assert "yellow" in enum and "blue" not in enum  # the wall's colour is no answer once the frisbee is located
    assert "frisbee" in chat.calls[0].last_user
    # a search that finds nothing leaves the photo's own colours, as before
    tb._backends["detector"] = _FindsByName("kite", [296.0, 196.0, 354.0, 254.0])
    d, chat = _describe(tb, ["blue"])
    d.answer(_scene(), "What colour is the frisbee?")
    assert "blue" in chat.calls[0].json_schema["properties"]["answer"]["enum"]


class _ListsAPerson(_FindsByName):
    """A detector whose listing holds a person (the thing a question names to say which) and whose search by name
    finds the thing asked about (a fake tool: this tests whose colours answer)."""

    def __init__(self, name: str, box: list[float], person: list[float]) -> None:
        super().__init__(name, box)
        self.person = person

    def detect_classes(self, image: Image.Image) -> list:
        from hydra_vr.api.types import Box, Detection

        return [Detection(Box(*self.person), "person", 0.7, "fake")]


def test_the_thing_asked_about_is_searched_for_though_another_thing_it_names_is_listed() -> None:
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import HydraConfig

    scene = _scene()
    ImageDraw.Draw(scene).rectangle((60, 80, 120, 220), fill=(20, 20, 20))  # a person in black, left of the disc
    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _ListsAPerson("parasol", [296.0, 196.0, 354.0, 254.0], [60.0, 80.0, 120.0, 220.0])
    d, chat = _describe(tb, ["yellow"])
    assert d.answer(scene, "What colour is the parasol beside the lady?").text == "yellow"
    enum = chat.calls[0].json_schema["properties"]["answer"]["enum"]
    assert "yellow" in enum and "black" not in enum  # the person's colours say which parasol, not its colour
    # the person is still listed, among the other objects
    assert "person" in chat.calls[0].last_user
    # where the search finds nothing, the listed person's colours are what there is, as before
    tb._backends["detector"] = _ListsAPerson("kite", [296.0, 196.0, 354.0, 254.0], [60.0, 80.0, 120.0, 220.0])
    d, chat = _describe(tb, ["black"])
    d.answer(scene, "What colour is the parasol beside the lady?")
    assert "black" in chat.calls[0].json_schema["properties"]["answer"]["enum"]


class _LikeliestOnly(_FindsByName):
    """A detector that clears its threshold for nothing, and whose likeliest box of the class asked for (below the
    threshold) is ``box`` (a fake tool: this tests what a colour question presumes, not detection)."""

    def detect(self, image: Image.Image, queries) -> list:
        return []

    def likeliest(self, image: Image.Image, queries) -> list:
        from hydra_vr.api.types import Box, Detection

        return [Detection(Box(*self.box), self.name, 0.12, "fake", query=q) for q in queries if q == self.name][:1]


def test_a_colour_question_takes_its_thing_as_there() -> None:
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import HydraConfig

    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _LikeliestOnly("frisbee", [296.0, 196.0, 354.0, 254.0])
    d, chat = _describe(tb, ["yellow"])
    assert d.answer(_scene(), "What colour is the frisbee?").text == "yellow"
    enum = chat.calls[0].json_schema["properties"]["answer"]["enum"]
    assert "yellow" in enum and "blue" not in enum  # the likeliest frisbee's pixels, not the wall's
    # no likeliest box of the class: the photo's own colours, as before
    tb._backends["detector"] = _LikeliestOnly("kite", [296.0, 196.0, 354.0, 254.0])
    d, chat = _describe(tb, ["blue"])
    d.answer(_scene(), "What colour is the frisbee?")
    assert "blue" in chat.calls[0].json_schema["properties"]["answer"]["enum"]


def test_a_part_question_takes_its_whole_as_there() -> None:
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import HydraConfig

    scene = _scene()
    ImageDraw.Draw(scene).rectangle((300, 200, 312, 212), fill=(250, 120, 190))  # a small pink mark on the disc
    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _LikeliestOnly("frisbee", [296.0, 196.0, 354.0, 254.0])
    d, chat = _describe(tb, ["pink"])
    d.answer(scene, "What colour is the frisbee's rim?")
    assert "The question asks about the rim of the frisbee" in chat.calls[0].last_user


def test_a_whole_no_detector_class_names_is_looked_for_by_its_name() -> None:
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import HydraConfig

    scene = _scene()
    ImageDraw.Draw(scene).rectangle((40, 60, 160, 200), fill=(120, 120, 124))  # a grey robot on the wall
    ImageDraw.Draw(scene).ellipse((92, 120, 104, 132), fill=(250, 120, 190))  # its small pink button
    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _FindsByName("robot", [40.0, 60.0, 160.0, 200.0])  # no COCO class is a robot
    d, chat = _describe(tb, ["pink"])
    d.answer(scene, "What colour is the robot's button?")
    assert "The question asks about the button of the robot" in chat.calls[0].last_user
    enum = chat.calls[0].json_schema["properties"]["answer"]["enum"]
    assert "pink" in enum and "blue" not in enum  # the robot's colours, its small shares too, not the wall's
    # a search by the whole's name that finds nothing leaves no part colours, as before
    tb._backends["detector"] = _FindsByName("kite", [40.0, 60.0, 160.0, 200.0])
    d, chat = _describe(tb, ["blue"])
    d.answer(scene, "What colour is the robot's button?")
    assert "no tool locates" not in chat.calls[0].last_user
