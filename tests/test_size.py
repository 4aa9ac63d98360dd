"""Size words ("Is the flower big?") are measured from the patch's box in its photo, not asked of an LLM."""

from __future__ import annotations

import pytest

from hydra_vr.api.size import answer_size, asked_size
from hydra_vr.sandbox import Sandbox


@pytest.mark.parametrize("question, asked", [
    ("Is the flower big?", "big"),
    ("Are the coins small?", "small"),
    ("Is the dog very large?", "big"),
    ("is the flower in the vase tiny", "small"),
    ("Is it big?", "big"),
    ("Is the big flower orange?", None),  # the colour is asked
    ("How big is the flower?", None),  # an open question
    ("Is the flower bigger than the vase?", None),
])
def test_asked_size_reads_only_a_question_about_a_things_size(question, asked) -> None:
    assert asked_size(question) == asked


def test_clear_sizes_are_decided_and_the_middle_is_left_to_the_backend() -> None:
    photo = (640, 427)
    assert answer_size("Is the flower big?", [169, 113, 400, 343], photo)[0] == "yes"  # 19% of the photo
    assert answer_size("Is the flower small?", [169, 113, 400, 343], photo)[0] == "no"
    assert answer_size("Is the coin big?", [10, 10, 35, 35], photo)[0] == "no"  # 0.2%
    assert answer_size("Is the cup big?", [0, 0, 100, 100], photo) is None  # 3.7%: not clear
    assert answer_size("Is the flower big?", None, photo) is None  # the whole photo: no box to measure


def test_verify_property_measures_size_in_the_sandbox_with_no_llm(embedded_toolbox, photo) -> None:
    # The 1.5B said "no" to "Is the flower big?" of the dahlia's crop once the colour shares beside it moved.
    # The embedded toolbox has no LLM: an answer that needed one would fail the program.
    with Sandbox(embedded_toolbox, timeout_s=30) as sb:
        program = sb.run('flower = ImagePatch(image).find("flower")[0]\n'
                         'final_answer = [flower.verify_property("flower", "big"), flower.verify_property("flower", "small"),\n'
                         '                flower.simple_query("Is the flower big?")]\n', str(photo("flower")))
    assert program.ok, program.error
    assert program.final_answer == [True, False, "yes"]
    verify = next(c for c in program.calls if c.tool == "verify_property")
    assert "fills 19" in verify.meta["evidence"] and "of the 640x427 photo" in verify.meta["evidence"]
