"""One thing, one box, for a name of several detector classes ("vehicle": car, truck, bus, ...): NanoDet's NMS runs
per class, so a close view of one coach came back as a bus, a truck, a train and a car over the same pixels, and
``len(find("vehicle"))`` said four."""

from __future__ import annotations

import pytest
from PIL import Image

from hydra_vr.api.backends.nanodet import NanoDetDetector, one_box_per_thing
from hydra_vr.api.types import Box, Detection


def _det(label: str, score: float, box: tuple[float, float, float, float], query: str) -> Detection:
    return Detection(Box(*box), label, score, "test", query=query)


def test_a_second_class_over_the_same_pixels_is_the_same_thing() -> None:
    coach = _det("bus", 0.7, (10, 10, 200, 120), "vehicles")
    again = _det("truck", 0.5, (12, 8, 205, 118), "vehicles")  # IoU about 0.94
    other = _det("car", 0.6, (250, 40, 330, 100), "vehicles")
    assert one_box_per_thing([coach, other, again], 0.7) == [coach, other]


def test_boxes_that_only_overlap_and_names_asked_apart_are_kept() -> None:
    rider = _det("bicycle", 0.8, (0, 0, 100, 100), "vehicle")
    beside = _det("motorcycle", 0.6, (50, 0, 150, 100), "vehicle")  # IoU 1/3: two things side by side
    assert one_box_per_thing([rider, beside], 0.7) == [rider, beside]
    cat = _det("cat", 0.5, (0, 0, 100, 100), "cat")
    dog = _det("dog", 0.4, (0, 0, 100, 100), "dog")  # two names asked for: each keeps its own answer
    assert one_box_per_thing([cat, dog], 0.7) == [cat, dog]


def _coach() -> Image.Image:
    """The lower left of the packaged bus photo: the coach fills the crop, and four classes fire on it."""
    from hydra_vr.assets import resolve_image

    return Image.open(resolve_image("sample:bus")).convert("RGB").crop((101, 270, 506, 810))


@pytest.mark.slow
def test_nanodet_counts_a_close_view_of_a_coach_as_one_vehicle() -> None:
    view = _coach()
    per_class = NanoDetDetector(same_thing_iou=1.01).detect(view, ["vehicle"])  # 1.01: never the same thing
    assert len({d.label for d in per_class}) >= 3 and len(per_class) >= 3
    found = NanoDetDetector().detect(view, ["vehicle"])
    assert len(found) == 1 and found[0].label == "bus"
    assert NanoDetDetector().detect(view, ["bus"])[0].box == found[0].box  # the class asked alone: the same box


def test_the_describe_listing_keeps_one_box_per_thing_of_one_name() -> None:
    from hydra_vr.api.backends.coco import CocoNameMapper
    from hydra_vr.api.backends.describe import _one_per_thing, _relevant_classes

    named = _relevant_classes("Which vehicle is the dog sitting in?", CocoNameMapper())
    assert named["car"] == named["truck"] == "vehicle" and named["dog"] == "dog"
    car = Detection(Box(10, 10, 200, 120), "car", 0.7, "test")
    truck = Detection(Box(12, 8, 205, 118), "truck", 0.5, "test")  # the same car, scored as a truck too
    dog = Detection(Box(11, 9, 201, 119), "dog", 0.4, "test")  # another name's thing keeps its box
    chair = Detection(Box(12, 8, 205, 118), "chair", 0.3, "test")  # a thing no name asks for is kept
    assert _one_per_thing([car, truck, dog, chair], named, 0.7) == [car, dog, chair]
    assert _one_per_thing([car, truck, dog, chair], named, None) == [car, truck, dog, chair]  # a detector without the rule


@pytest.mark.slow
def test_describe_names_a_close_view_of_a_coach_once(embedded_toolbox) -> None:
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.api.types import mark_object_crop
    from hydra_vr.question import parse

    found = DescribeVQA(ToolContext(toolbox=embedded_toolbox, read_question=parse)).describe(
        mark_object_crop(_coach()), "Which sort of vehicle do we see here?")
    assert [o["label"] for o in found["relevant"]] == ["bus"]
    assert not {"truck", "train", "car"} & {o["label"] for o in found["objects"]}
