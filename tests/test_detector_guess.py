"""Where the detector's own best box below its threshold stands in: a class it missed that the classifier sees, and
a grounding's thing presumed there. Fake tools (this tests the toolbox's logic; NanoDet's likeliest() is tested on a
real photo in test_vision_embedded.py)."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from hydra_vr.api import VisionToolbox
from hydra_vr.api.backends.coco import CocoNameMapper
from hydra_vr.api.types import Box, Detection, LabelScore
from hydra_vr.config import HydraConfig

_TIGHT = [300.0, 200.0, 340.0, 240.0]  # the detector's candidate: a box regressed around the thing
_COARSE = [220.0, 120.0, 460.0, 330.0]  # the classifier's activation region: where the class lights up


class _Missing:
    """A closed-set detector that clears its threshold for nothing, and knows its likeliest box of a class."""

    def __init__(self, guess: bool = True) -> None:
        self.mapper, self.guess = CocoNameMapper(), guess

    def detect(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        return []

    def map_name(self, name: str):
        return self.mapper.map(name)

    def explain(self, name: str) -> str:
        return self.mapper.map(name).reason

    def likeliest(self, image: Image.Image, queries: Sequence[str]) -> list[Detection]:
        classes = [c for q in queries for c in self.mapper.map(q).classes]
        return [Detection(Box(*_TIGHT), classes[0], 0.2, "fake")] if classes and self.guess else []


class _Sees:
    """A classifier that localizes the classes it is told it sees."""

    def __init__(self, seen: bool) -> None:
        self.seen = seen

    def classify(self, images: Sequence[Image.Image], top_k: int = 5) -> list[list[LabelScore]]:
        return [[LabelScore("soccer ball", 0.7)] for _ in images]

    def map_name(self, name: str) -> tuple[str, ...]:
        return ("soccer ball",) if "ball" in name or "soccer ball" in name else ()

    def localize(self, image: Image.Image, name: str) -> list[Detection]:
        return [Detection(Box(*_COARSE), "soccer ball", 0.7, "classifier", query=name)] if self.seen else []


def _toolbox(seen: bool, guess: bool = True) -> VisionToolbox:
    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"], tb._backends["classifier"] = _Missing(guess), _Sees(seen)
    return tb


def test_a_class_the_detector_missed_and_the_classifier_sees_gets_the_detectors_own_box() -> None:
    image = Image.new("RGB", (640, 480), "gray")
    tb = _toolbox(seen=True)
    with tb.recording() as calls:
        [found] = tb.find(image, "ball")
    # where: the detector's box of its class; that it is there: the classifier's score
    assert found.box.to_list() == _TIGHT and found.score == 0.7 and found.label == "soccer ball"
    assert "likeliest" in calls[0].meta["mapping"] and not calls[0].meta.get("presumed")
    # a detector without a likeliest box leaves the classifier's region
    plain = _toolbox(seen=True, guess=False)
    assert [d.box.to_list() for d in plain.find(image, "ball")] == [_COARSE]


def test_only_a_thing_presumed_there_gets_a_box_no_tool_saw() -> None:
    image = Image.new("RGB", (640, 480), "gray")
    tb = _toolbox(seen=False)
    assert tb.find(image, "ball") == []  # nothing cleared a threshold: for a count or a yes/no, nothing is there
    with tb.recording() as calls:
        [guess] = tb.find(image, "ball", presumed=True)
    assert guess.box.to_list() == _TIGHT and guess.score == 0.2
    assert calls[0].args == {"name": "ball", "presumed": True} and calls[0].meta["presumed"]
    assert tb.find(image, "nebula", presumed=True) == []  # no class for the name: still nothing
