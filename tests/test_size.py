"""Size words ("big", "tiny") of a part of the photo are measured from its box, not asked of an LLM."""

from __future__ import annotations

import pytest

from hydra_vr.api.size import BIG_SHARE, SMALL_SHARE, photo_share, size_verdict
from hydra_vr.sandbox import Sandbox


def test_photo_share_is_the_boxs_area_over_the_photos() -> None:
    assert photo_share([0, 0, 320, 240], (640, 480)) == pytest.approx(0.25)
    assert photo_share([10, 10, 5, 20], (640, 480)) == 0.0  # a box turned inside out covers nothing


@pytest.mark.parametrize("prop, box, verdict", [
    ("big", [100, 100, 400, 400], True),  # 29% of 640x480
    ("very large", [100, 100, 400, 400], True),
    ("small", [100, 100, 400, 400], False),
    ("tiny", [5, 5, 30, 30], True),  # 0.2%
    ("huge", [5, 5, 30, 30], False),
])
def test_clear_sizes_are_decided(prop, box, verdict) -> None:
    said = size_verdict(prop, box, (640, 480))
    assert said is not None and said[0] is verdict and "of the 640x480 photo" in said[1]


def test_the_middle_another_property_or_the_whole_photo_decides_nothing() -> None:
    assert size_verdict("big", [0, 0, 120, 120], (640, 480)) is None  # 4.7%: between the thresholds
    assert size_verdict("red", [100, 100, 400, 400], (640, 480)) is None
    assert size_verdict("big", None, (640, 480)) is None
    assert size_verdict("", [100, 100, 400, 400], (640, 480)) is None


def test_the_docstring_the_reasoner_reads_states_the_thresholds_the_tools_use() -> None:
    from hydra_vr.api.image_patch import ImagePatch

    doc = ImagePatch.share_of_photo.__doc__ or ""
    assert f"big from {BIG_SHARE:g}" in doc and f"small under {SMALL_SHARE:g}" in doc


def test_a_program_measures_size_in_the_sandbox_with_no_llm(embedded_toolbox, photo) -> None:
    # The embedded toolbox has no LLM: an answer that needed one would fail the program.
    with Sandbox(embedded_toolbox, timeout_s=30) as sb:
        program = sb.run('flower = ImagePatch(image).find("flower")[0]\n'
                         'final_answer = [flower.verify_property("flower", "big"), flower.verify_property("flower", "small"),\n'
                         '                flower.share_of_photo()]\n', str(photo("flower")))
    assert program.ok, program.error
    big, small, share = program.final_answer
    assert (big, small) == (share >= BIG_SHARE, share < SMALL_SHARE) and 0 < share < 1
    verify = next(c for c in program.calls if c.tool == "verify_property")
    assert "of the" in verify.meta["evidence"] and "photo" in verify.meta["evidence"]
