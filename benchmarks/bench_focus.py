"""Where a photo blurred all over begins: the edge energy of a photo's sharpest part, sharp and blurred.

    python benchmarks/bench_focus.py [IMAGE ...]

For each photo (default: the packaged sample photos of the dev split) it prints ``api.focus.photo_detail``
(the fine detail of the photo's sharpest part in its weakest direction) as shipped, after a Gaussian blur of sigma 1.5 and 3
pixels at the measuring size, and after a horizontal motion blur of 9 and 15 pixels. ``PHOTO_BLURRY_BELOW``
must lie between the sharp column and the blurred ones. Figures only: no threshold is asserted here.
"""

from __future__ import annotations

import sys

import cv2
import numpy as np
from PIL import Image

from hydra_vr.api import focus
from hydra_vr.assets import resolve_image

DEV_PHOTOS = ("bus", "coffee", "china", "flower", "motorcycle", "page", "rocket")


def _at_side(image: Image.Image) -> np.ndarray:
    scale = focus.SIDE / max(image.size)
    return np.asarray(image.convert("RGB").resize((round(image.width * scale), round(image.height * scale))))


def _detail(arr: np.ndarray) -> float:
    return focus.photo_detail(Image.fromarray(arr))


def main(paths: list[str]) -> None:
    names = paths or [f"sample:{n}" for n in DEV_PHOTOS]
    print(f"{'photo':<40} {'sharp':>6} {'g1.5':>6} {'g3':>6} {'m9':>6} {'m15':>6}   threshold {focus.PHOTO_BLURRY_BELOW}")
    for name in names:
        arr = _at_side(Image.open(resolve_image(name)))
        row = [_detail(arr), _detail(cv2.GaussianBlur(arr, (0, 0), 1.5)), _detail(cv2.GaussianBlur(arr, (0, 0), 3))]
        for length in (9, 15):
            kernel = np.zeros((length, length), np.float32)
            kernel[length // 2, :] = 1.0 / length
            row.append(_detail(cv2.filter2D(arr, -1, kernel)))
        print(f"{name:<40} " + " ".join(f"{v:6.1f}" for v in row))


if __name__ == "__main__":
    main(sys.argv[1:])
