"""Place questions ("Is the chimney on the left or the right side of the picture?") answered from boxes."""

from __future__ import annotations

import pytest
from PIL import Image

from hydra_vr.answer_types import PlaceAsked, asked_place, expected_type
from hydra_vr.api.placement import place_beside, place_in
from hydra_vr.api.types import Answer
from hydra_vr.memory.textualizer import textualize_call


@pytest.mark.parametrize(
    "question, thing, places, reference, frame_named",
    [
        ("Is the chimney on the left or the right side of the photo?", "chimney", ("left", "right"), "", True),
        ("Is the bearded man on the left or on the right?", "bearded man", ("left", "right"), "", False),
        ("Is the woman in the green scarf to the left or to the right of the woman in the grey hat?",
         "woman in the green scarf", ("left", "right"), "woman in the grey hat", False),
        ("Is the cup on the left or right of the laptop?", "cup", ("left", "right"), "laptop", False),
        ("Is the balloon in the middle or at the edge of the photo?", "balloon", ("middle", "edge"), "", True),
        ("Is the dog at the top or bottom of the image?", "dog", ("top", "bottom"), "", True),
        ("Is the third, partly covered leaf at the top or at the bottom of the photo?", "third partly covered leaf",
         ("top", "bottom"), "", True),
        ("Is the red car parked on the left or on the right?", "red car", ("left", "right"), "", False),
        ("Is the cat in the center or in a corner?", "cat", ("middle", "edge"), "", True),
        ("Are the people on the left side or the right side?", "people", ("left", "right"), "", True),
        ("is the lamp in the upper or the lower half of the picture", "lamp", ("top", "bottom"), "", True),
        ("Is the sun on the right or the left in the photo?", "sun", ("right", "left"), "", True),
        ("Is the boat near the top or the bottom of the picture?", "boat", ("top", "bottom"), "", True),
        ("Is the boy sitting on the bench on the left or on the right?", "boy", ("left", "right"), "", False),
    ],
)
def test_place_questions_are_read_with_their_thing_and_reference(question, thing, places, reference, frame_named):
    asked = asked_place(question)
    assert asked is not None
    assert (asked.thing, asked.places, asked.reference, asked.frame_named) == (thing, places, reference, frame_named)
    assert asked.options == expected_type(question).options


@pytest.mark.parametrize(
    "question",
    [
        "Which way is the scooter facing, left or right?",  # a direction
        "Is the bald man pointing left or right?",
        "Is it windy or calm?",
        "Is the light on or off?",
        "Is the man on the left wearing a hat?",  # a place that tells the thing, asked yes/no
        "What is on the left side of the photo?",
        "Where is the fork?",
        "Is the glass full or empty?",
        "Is the tower left or right, or in the middle of the photo or not?",
    ],
)
def test_other_questions_are_not_place_questions(question):
    assert asked_place(question) is None


def test_places_in_a_frame_keep_off_the_dividing_line():
    frame = (0, 0, 640, 427)
    assert place_in((74, 80, 381, 333), frame, ("left", "right")) == "left"  # the pagoda: centre at 0.35
    assert place_in((400, 0, 640, 100), frame, ("left", "right")) == "right"
    assert place_in((137, 204, 1145, 720), (0, 0, 1280, 720), ("left", "right")) is None  # centre at 0.501
    assert place_in((207, 123, 431, 326), frame, ("middle", "edge")) == "middle"  # the rocket
    assert place_in((0, 0, 100, 100), frame, ("middle", "edge")) == "edge"
    assert place_in((142, 100, 242, 250), frame, ("middle", "edge")) is None  # centre 0.2 off: neither
    assert place_in((0, 300, 640, 427), frame, ("top", "bottom")) == "bottom"
    assert place_in((0, 0, 100, 100), frame, ("left", "top")) is None  # two axes
    assert place_beside((56, 390, 229, 898), (223, 400, 347, 849), ("left", "right"), (0, 0, 810, 1080)) == "left"
    assert place_beside((0, 0, 100, 100), (10, 0, 110, 100), ("left", "right"), (0, 0, 810, 1080)) is None
    assert place_beside((0, 0, 100, 100), (0, 500, 100, 600), ("top", "bottom"), (0, 0, 810, 1080)) == "top"


def test_a_patch_is_placed_by_its_own_box_in_the_photo(Patch, photo, embedded_toolbox):
    bus = Patch(photo("bus"))
    people = sorted(bus.find("person"), key=lambda p: p.horizontal_center)
    assert len(people) >= 3
    # no LLM in this toolbox: an answer that needed the describe backend would raise
    assert people[0].simple_query("Is the person on the left or the right side of the photo?") == "left"
    assert people[-1].simple_query("Is this person on the left or on the right?") == "right"
    with embedded_toolbox.recording() as calls:
        assert bus.simple_query("Is the bus in the middle or at the edge of the photo?") == "middle"
    (call,) = [c for c in calls if c.tool == "simple_query"]
    assert isinstance(call.result, Answer) and call.result.source == "place"
    assert "(from the boxes: find('bus'):" in textualize_call(call)
    with pytest.raises(RuntimeError, match="needs an LLM"):
        people[0].simple_query("What is this person holding?")  # not a place: the backend answers, and has no LLM


def test_a_sandboxed_program_places_its_patch(embedded_toolbox, photo):
    # the patch's box and the photo's size travel over the sandbox wire with the question
    from hydra_vr.sandbox import Sandbox

    code = (
        "image_patch = ImagePatch(image)\n"
        "people = sort_patches_left_to_right(image_patch.find('person'))\n"
        "final_answer = people[0].simple_query('Is the person on the left or the right side of the photo?')\n"
    )
    with Sandbox(embedded_toolbox, timeout_s=20) as sb:
        result = sb.run(code, Image.open(photo("bus")).convert("RGB"))
    assert result.ok, result.error
    assert result.final_answer == "left"


def test_place_asked_is_a_plain_record():
    asked = asked_place("Is the chimney on the left or the right side of the photo?")
    assert asked == PlaceAsked("chimney", ("left", "right"), ("left", "right"), "", True)
