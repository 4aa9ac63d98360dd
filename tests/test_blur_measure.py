"""is_blurry: a declared operation the reasoner sees, measured from pixels, relative and absolute (no LLM)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageFilter

from hydra_vr.api import focus
from hydra_vr.api.types import ToolCallRecord
from hydra_vr.memory.textualizer import textualize_call
from hydra_vr.sandbox import Sandbox


def _motion(image: Image.Image, length: int = 15) -> Image.Image:
    """A horizontal shake of ``length`` pixels at the measuring size."""
    import cv2

    scale = focus.SIDE / max(image.size)
    arr = np.asarray(image.resize((round(image.width * scale), round(image.height * scale))))
    kernel = np.zeros((length, length), np.float32)
    kernel[length // 2, :] = 1.0 / length
    return Image.fromarray(cv2.filter2D(arr, -1, kernel))


@pytest.mark.parametrize("name", ["bus", "astronaut", "coffee"])
def test_a_photo_blurred_all_over_reads_blurred_and_the_sharp_one_does_not(photo, name) -> None:
    sharp = Image.open(photo(name)).convert("RGB")
    assert focus.photo_detail(sharp) >= focus.PHOTO_BLURRY_BELOW
    for blurred in (sharp.filter(ImageFilter.GaussianBlur(4)), _motion(sharp)):
        assert focus.photo_detail(blurred) < focus.PHOTO_BLURRY_BELOW
        whole = focus.patch_focus(blurred)
        assert whole is not None and whole.blurry and whole.verdict == "blurry"
    assert not focus.patch_focus(sharp).blurry


def test_a_shake_leaves_edges_across_it_sharp_so_the_weakest_direction_is_kept(photo) -> None:
    sharp = Image.open(photo("bus")).convert("RGB")
    shaken = _motion(sharp)
    laplacian_top = float(np.percentile(focus.detail_tiles(shaken)[0], 90))  # the isotropic measure stays high
    assert focus.photo_detail(shaken) < focus.PHOTO_BLURRY_BELOW < laplacian_top


def test_is_blurry_is_an_operation_in_the_sandbox_with_its_own_trace_line(embedded_toolbox, photo, tmp_path) -> None:
    sharp = Image.open(photo("bus")).convert("RGB")
    ringed = sharp.filter(ImageFilter.GaussianBlur(6))
    w, h = sharp.size
    inner = (w // 8, h // 8, w - w // 8, h - h // 8)
    ringed.paste(sharp.crop(inner), inner[:2])  # a sharp middle in a blurred border: a portrait's backdrop
    path = tmp_path / "ringed.png"
    ringed.save(path)
    shaken = tmp_path / "shaken.png"
    _motion(sharp).save(shaken)
    program_text = ("p = ImagePatch(image)\n"
                    "middle = p.crop(p.width / 4, p.height / 4, 3 * p.width / 4, 3 * p.height / 4)\n"
                    "final_answer = [p.is_blurry(), p.is_blurry(background=True), middle.is_blurry()]\n")
    with Sandbox(embedded_toolbox, timeout_s=60) as sb:
        ringed_run = sb.run(program_text, str(path))
        shaken_run = sb.run(program_text, str(shaken))
    assert ringed_run.ok, ringed_run.error
    assert ringed_run.final_answer == [False, True, False]  # a sharp photo with a blurred backdrop
    assert shaken_run.ok and shaken_run.final_answer[0] is True  # blurred all over
    lines = [textualize_call(c) for c in ringed_run.calls if c.tool == "focus"]
    assert lines[0].startswith("is_blurry of the whole photo: sharp")
    assert lines[1].startswith("is_blurry of the background: blurry")


def test_a_region_with_no_detail_is_said_so() -> None:
    line = textualize_call(ToolCallRecord("focus", {"box": [0, 0, 10, 10], "background": False}, None, 1.0))
    assert line == "is_blurry of the patch at [0, 0, 10, 10]: too little detail to measure"
