"""Focus measured from pixels (api.focus): snapshots on the labelled photos.

These tests pin behaviour on the labelled real photos (benchmarks/real_photos/questions.jsonl): the tools
run on a labelled photo, and what is expected is what that photo shows. They are snapshots of behaviour
on the benchmark's own items, not mechanism tests; the mechanism tests, with phrasings of their own, are
in tests/test_focus.py.
"""

from __future__ import annotations

import pytest

from hydra_vr.api import focus
from tests.test_focus import _open


@pytest.mark.parametrize("name, blurry", [
    ("flower", True),  # the dahlia's leaves far out of focus: 9%
    ("zidane", True),  # the crowd behind the two men: 14%
    ("chelsea", True),
    ("bus", False),  # the street behind the bus: 61%
    ("china", False),
])
def test_a_programs_background_focus_is_measured(Patch, photo, name, blurry) -> None:
    assert Patch(photo(name)).is_blurry(background=True) is blurry


def test_a_found_thing_is_measured_on_its_own_tiles(Patch, photo) -> None:
    bus = Patch(photo("bus")).find("bus")[0]
    assert bus.is_blurry() is False


def test_a_plain_backdrop_or_a_word_of_another_sense_decides_nothing(embedded_toolbox, photo) -> None:
    # Grace Hopper's plain blue backdrop and dark uniform hold no detail to lose: they tell neither
    plain = focus.named_focus(embedded_toolbox.look_for, _open(photo, "grace_hopper"), "background")
    assert plain is None or plain.verdict is None
    # sharp, clear, fuzzy speak of an edge, a glass, fur as well: as a property they are not measured
    assert focus.property_focus(embedded_toolbox.look_for, _open(photo, "chelsea"), "cat", "fuzzy") is None
    assert focus.property_focus(embedded_toolbox.look_for, _open(photo, "bus"), "bus", "clear") is None


def test_verify_property_measures_focus_and_simple_query_does_not(embedded_toolbox, photo) -> None:
    flower = _open(photo, "flower")
    verdict, evidence = embedded_toolbox.verify_property(flower, "background", "blurry")
    assert verdict is True and "of the sharpest part's" in evidence
    verdict, _ = embedded_toolbox.verify_property(flower, "background", "in focus")
    assert verdict is False
    assert embedded_toolbox.verify_property(flower, "background", "very blurry")[0] is True  # a pole word in the property
    with pytest.raises(RuntimeError, match="needs an LLM"):  # no word of the question is read: the backend answers
        embedded_toolbox.simple_query(flower, "Is the background sharp or blurry?")
