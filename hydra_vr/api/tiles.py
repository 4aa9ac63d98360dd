"""Sliced detection: a detector run on the whole image and on overlapping tiles of it, merged.

A detector resizes the whole photo to its input (NanoDet: 416x416), so a thing a few dozen pixels wide
in a large photo shrinks below what it can see; run on a tile, the same thing is seen larger. This is
the slicing of SAHI (Akyon et al., 2022, "Slicing Aided Hyper Inference"): the whole-image detections
are kept, and a tile's detection is added where it is no part of one already kept. A tile's detection
that touches a seam inside the image is a thing cut by the tile (half a person) and is dropped: a thing
that wide is seen by the whole-image pass or by the neighbouring tile, which overlaps it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from PIL import Image

from hydra_vr.api.types import Box, Detection
from hydra_vr.config import TilesConfig

_SEAM = 0.01  # a box within 1% of a tile side (at least 2 px) of an inner seam touches it
_SAME_THING = 0.5  # intersection over the smaller box from which two boxes of one label are one thing


def applies(tiling: TilesConfig, size: tuple[int, int]) -> bool:
    """Whether an image of ``size`` is tiled: a smaller one is seen whole (a tile would only be upscaled)."""
    return tiling.grid > 1 and max(size) >= tiling.min_side


def tiles(tiling: TilesConfig, size: tuple[int, int]) -> list[tuple[int, int, int, int]]:
    """The tiles' boxes ``(x1, y1, x2, y2)``, row by row, covering an image of ``size``."""
    width, height = size
    grid, overlap = tiling.grid, tiling.overlap
    tile_w, tile_h = width / (grid - (grid - 1) * overlap), height / (grid - (grid - 1) * overlap)
    out = []
    for row in range(grid):
        for col in range(grid):
            x1, y1 = round(col * tile_w * (1 - overlap)), round(row * tile_h * (1 - overlap))
            x2 = width if col == grid - 1 else min(width, round(x1 + tile_w))
            y2 = height if row == grid - 1 else min(height, round(y1 + tile_h))
            out.append((x1, y1, x2, y2))
    return out


def _touches_seam(box: Box, tile: tuple[int, int, int, int], size: tuple[int, int]) -> bool:
    """Whether ``box`` (in image pixels) touches a side of ``tile`` that lies inside the image."""
    x1, y1, x2, y2 = tile
    mx, my = max(2.0, _SEAM * (x2 - x1)), max(2.0, _SEAM * (y2 - y1))
    return ((x1 > 0 and box.x1 - x1 < mx) or (y1 > 0 and box.y1 - y1 < my)
            or (x2 < size[0] and x2 - box.x2 < mx) or (y2 < size[1] and y2 - box.y2 < my))


def _overlap_of_smaller(a: Box, b: Box) -> float:
    smaller = min(a.area, b.area)
    return a.intersection(b) / smaller if smaller > 0 else 0.0


def sliced_detect(detect: Callable[[Image.Image], list[Detection]], image: Image.Image, tiling: TilesConfig) -> list[Detection]:
    """``detect`` on the whole ``image`` and, where ``tiling`` applies, on its tiles; best first.

    Every whole-image detection is kept; a tile's is added unless it touches an inner seam or covers
    mostly the same pixels as a kept detection of its label (so one thing is never counted twice).
    With ``when="on_miss"`` the tiles are looked at only when the whole image gave nothing.
    """
    whole = detect(image)
    if not applies(tiling, image.size) or (whole and tiling.when == "on_miss"):
        return whole
    found: list[Detection] = []
    for tile in tiles(tiling, image.size):
        ox, oy = tile[0], tile[1]
        for d in detect(image.crop(tile)):
            box = d.box.shift(ox, oy)
            if not _touches_seam(box, tile, image.size):
                found.append(dataclasses.replace(d, box=box))
    kept = list(whole)
    for d in sorted(found, key=lambda d: d.score, reverse=True):
        if all(k.label != d.label or _overlap_of_smaller(k.box, d.box) < _SAME_THING for k in kept):
            kept.append(d)
    kept.sort(key=lambda d: d.score, reverse=True)
    return kept
