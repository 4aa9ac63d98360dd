"""Focus questions answered from pixels: "Are the trees behind her sharp or blurry?", "Is the man in focus?".

The part of a photo in focus holds its finest detail; a part thrown out of focus keeps its coarse
shapes but loses that detail. Fine detail is measured as edge energy (the 90th percentile of
|Laplacian| on the photo scaled to 512 pixels) in a grid of tiles, and a region's share is its
median tile against the sharpest tiles of the same photo, so the figure does not depend on the
camera or the light. No offline model sees blur, and the describe LLM sees no pixels: it said
"sharp" for a close-up's and a portrait's backgrounds, both thrown far out of focus (8% and 15%).

The toolbox asks this module before any VQA backend, like ``api.where``, with the focus the question
frame read (:class:`hydra_vr.asked.FocusAsked`: the region asked about and what each answer claims). It
decides only on a clear measure (under 30%: blurry, 40% or more: sharp) of a region it can tell: the
background (the photo's border), the photo, or things find() locates; otherwise the backend answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from PIL import Image

from hydra_vr.asked import FocusAsked
from hydra_vr.api.names import expression_names
from hydra_vr.lexicon.words import FOCUS_WORDS, photo_nouns

LookFor = Callable[[Image.Image, str], tuple[list[Any], dict[str, Any]]]

# The focus vocabulary and the background words are the lexicon's (``lexicon.words``), which the question frame reads too.

GRID = 8
SIDE = 512  # the photo is measured at this longer side, so tiles mean the same at any resolution
BLURRY_BELOW = 0.30
SHARP_FROM = 0.40


# A photo blurred all over (shaken, or focused on nothing) has no sharp part to measure against: its sharpest
# tiles' fine detail is itself low. It is measured along four directions, the weakest kept, since a shake
# smears one direction and leaves edges across it sharp. Set between sharp photos (21-65) and the same
# photos blurred (Gaussian sigma 1.5 or 3 px, motion 9-15 px: 11 or less); benchmarks/bench_focus.py prints both.
PHOTO_BLURRY_BELOW = 15.0
_DIRECTIONS = tuple(np.array(k, np.float32) for k in (
    [[0, 0, 0], [1, -2, 1], [0, 0, 0]], [[0, 1, 0], [0, -2, 0], [0, 1, 0]],
    [[1, 0, 0], [0, -2, 0], [0, 0, 1]], [[0, 0, 1], [0, -2, 0], [1, 0, 0]],
))


def photo_detail(image: Image.Image, grid: int = GRID) -> float:
    """The fine detail of the photo's sharpest part, in its weakest direction: for each of four directions,
    the 90th percentile over tiles of each tile's 90th percentile |second derivative| (at ``SIDE`` pixels);
    the smallest of the four."""
    gray = _gray_at_side(image, grid)
    tops = []
    for kernel in _DIRECTIONS:
        response = np.abs(cv2.filter2D(gray, -1, kernel))
        tops.append(float(np.percentile([np.percentile(response[tile], 90) for _, tile in _tiles(gray.shape, grid)], 90)))
    return min(tops)


@dataclass(frozen=True)
class Focus:
    """A region's fine detail as a share of the sharpest part of its photo (``share``), what the region was,
    and the fine detail of the photo's sharpest part itself (``photo_detail``), which says whether anything in
    the photo is sharp at all."""

    share: float
    region: str
    photo_detail: float | None = None

    @property
    def photo_blurred(self) -> bool:
        """The whole photo lacks fine detail: blurred all over, whatever the shares."""
        return self.photo_detail is not None and self.photo_detail < PHOTO_BLURRY_BELOW

    @property
    def verdict(self) -> str | None:
        """"blurry", "sharp", or None when the measure is between the two."""
        if self.photo_blurred:
            return "blurry"
        return "blurry" if self.share < BLURRY_BELOW else "sharp" if self.share >= SHARP_FROM else None

    @property
    def blurry(self) -> bool:
        """A yes/no verdict: blurred all over, or under the middle of the two thresholds."""
        return self.photo_blurred or self.share < (BLURRY_BELOW + SHARP_FROM) / 2

    def to_dict(self) -> dict[str, Any]:
        """The measure and its verdicts, as a trace keeps them (the answer checks read ``blurry`` offline too)."""
        return {"share": round(self.share, 4), "region": self.region, "photo_detail": self.photo_detail,
                "verdict": self.verdict, "blurry": self.blurry}


def detail_tiles(image: Image.Image, grid: int = GRID) -> tuple[np.ndarray, np.ndarray]:
    """(edge energy, coarse contrast) per tile (``grid`` x ``grid``) of ``image`` scaled to ``SIDE`` pixels
    on its longer side. Coarse contrast is the spread of the tile smoothed far past any blur: a plain
    wall or sky has none, and so no detail to lose; it tells neither sharp nor blurry."""
    gray = _gray_at_side(image, grid)
    lap = np.abs(cv2.Laplacian(gray, cv2.CV_32F, ksize=3))
    coarse = cv2.GaussianBlur(gray, (0, 0), 4)
    detail = np.zeros((grid, grid), dtype=np.float32)
    contrast = np.zeros((grid, grid), dtype=np.float32)
    for (i, j), tile in _tiles(gray.shape, grid):
        detail[i, j] = np.percentile(lap[tile], 90)
        contrast[i, j] = coarse[tile].std()
    return detail, contrast


def _gray_at_side(image: Image.Image, grid: int) -> np.ndarray:
    """``image`` in grey levels, scaled to ``SIDE`` pixels on its longer side (at least ``grid`` on each)."""
    scale = SIDE / max(image.size)
    small = image.convert("L").resize((max(grid, round(image.width * scale)), max(grid, round(image.height * scale))),
                                      Image.BILINEAR)
    return np.asarray(small, dtype=np.float32)


def _tiles(shape: tuple[int, ...], grid: int) -> list[tuple[tuple[int, int], tuple[slice, slice]]]:
    """((row, column), slices) of each tile of a ``grid`` x ``grid`` split of an array of ``shape``."""
    h, w = shape[:2]
    return [((i, j), (slice(i * h // grid, (i + 1) * h // grid), slice(j * w // grid, (j + 1) * w // grid)))
            for i in range(grid) for j in range(grid)]


PLAIN_BELOW = 6.0  # coarse contrast (grey levels) under which a tile is plain


def _focus(image: Image.Image, mask: np.ndarray, region: str) -> Focus | None:
    """The median edge energy of the ``mask`` tiles that are not plain, against the sharpest tiles of the
    photo; None when under two such tiles are left."""
    detail, contrast = detail_tiles(image, mask.shape[0])
    keep = mask & (contrast >= PLAIN_BELOW)
    top = float(np.percentile(detail, 90))
    if keep.sum() < 2 or top <= 0:
        return None
    return Focus(float(np.median(detail[keep])) / top, region, photo_detail(image))


def patch_focus(image: Image.Image, box: Sequence[float] | None = None, background: bool = False) -> Focus | None:
    """The focus of the part of ``image`` (a whole photo) in ``box`` (the whole photo when None), or of its
    background (its border tiles) with ``background``; None when the region holds under two tiles with detail.
    The whole photo is sharp when any part of it is (a portrait with a blurred backdrop is a sharp photo): its
    share is 1 and only its sharpest part's own edge energy (``photo_detail``) can call it blurry."""
    if background:
        return background_focus(image)
    if box is None:
        return Focus(1.0, "the whole photo", photo_detail(image))
    return boxes_focus(image, [box], "patch")


def background_focus(image: Image.Image) -> Focus | None:
    """The fine detail of the photo's border tiles (where the background is when the subject is framed)."""
    ring = np.ones((GRID, GRID), dtype=bool)
    ring[1:-1, 1:-1] = False
    return _focus(image, ring, "the background (the photo's border)")


def boxes_focus(image: Image.Image, boxes: Sequence[Sequence[float]], name: str) -> Focus | None:
    """The fine detail of the tiles whose centres lie in ``boxes``."""
    cx = (np.arange(GRID) + 0.5) * image.width / GRID
    cy = (np.arange(GRID) + 0.5) * image.height / GRID
    mask = np.zeros((GRID, GRID), dtype=bool)
    for x1, y1, x2, y2 in (b[:4] for b in boxes):
        mask |= np.outer((cy >= y1) & (cy <= y2), (cx >= x1) & (cx <= x2))
    return _focus(image, mask, f"the {name} found at " + "; ".join(str([int(v) for v in b[:4]]) for b in boxes[:3]))


def answer_focus(look_for: LookFor, image: Image.Image, question: str, asked: FocusAsked) -> tuple[str, str] | None:
    """(answer, evidence) for the focus question ``asked`` about the whole photo ``image``, else None (too little
    detail, a measure in between, or a thing the tools do not find). ``question``'s words name the thing."""
    focus = _region_focus(look_for, image, question.lower(), asked.region)
    if focus is None or focus.verdict is None:
        return None
    evidence = f"fine detail of {focus.region}: {100 * focus.share:.0f}% of the sharpest part's: {focus.verdict}"
    answer = next((a for a, pole in asked.claims if pole == focus.verdict), None)
    return (answer, evidence) if answer is not None else None


def _region_focus(look_for: LookFor, image: Image.Image, question: str, region: str) -> Focus | None:
    if region == "background":
        return background_focus(image)
    if region == "photo":
        return patch_focus(image)  # "Is the photo blurry?": the photo itself, sharp if any part of it is
    for name in expression_names(FOCUS_WORDS.sub(" ", question)):
        if name.endswith(" region") or name in photo_nouns():
            continue
        dets, _ = look_for(image, name)
        if dets:
            return boxes_focus(image, [d.box.to_list() for d in dets], name)
    return None


__all__ = ["Focus", "answer_focus", "background_focus", "boxes_focus", "detail_tiles", "patch_focus"]
