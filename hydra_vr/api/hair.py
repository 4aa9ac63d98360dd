"""Hair colour as people name it, measured on the pixels around a face (no model).

A colour question about hair ("what colour is her hair?") was answered with the base colour names of the
whole person (pink, of the skin) or of the head's box (orange and brown for fair hair): hair is named on
its own scale (black, brown, blonde, red, gray, white), and a head's box holds the backdrop and the
forehead too. Here the head's region around the face box the face detector gives is clustered by colour;
the cluster like the face's own skin is left out, and of the others the one that fills the places where
hair grows (a ring around the top of the face), and not the region's outside, where the backdrop is, is
the hair. Its median colour is named by lightness and chroma (:func:`shade_name`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from hydra_vr.lexicon import wordnet as wn

Box = Sequence[float]

# Hair names by the CIE Lab lightness (L) and chroma (C) of a head's hair pixels, measured as photos show them
# (shadowed strands and all: fair hair reads L 37-55 in a photo, not a chart's 70). Set by eye on 44 heads in 16
# sample photos of PyPI face packages, outside the labelled set: benchmarks/bench_hair.py measures them.
HAIR_NAMES = ("black", "brown", "blonde", "red", "gray", "white")
_BLACK_L = 17.0  # darker than this is black, whatever its tint
_DARK_GRAY_C = 6.0  # ... and up to L 22 when it has no tint either
_FAIR_L = 38.0  # lighter than this is fair: blonde, or gray / white without tint
_GRAY_C = 10.0  # less chroma than this is no colour: gray, or white over L 70
_WHITE_L = 70.0
_RED_C = 25.0  # a strong tint whose red part is most of its yellow part: red hair (auburn, ginger)

# The head's region around the face box, in face widths and heights (left, top, right, bottom): hair grows above
# and beside the face, and the backdrop fills the region's corners.
_REGION = (-0.35, -0.7, 1.35, 0.6)
_SIDE = 48  # the region is clustered at this many pixels on its longer side
_CLUSTERS = 4  # hair, skin, backdrop and one more (a collar, a hat's band, shadow)
_SKIN_DELTA = 14.0  # Lab distance under which a cluster's centre is the face's skin
_MIN_SHARE = 0.06  # under this share of the region's prior, no hair is seen (bald, or one colour with the backdrop)


@dataclass(frozen=True)
class HairReading:
    """The hair's name, its median colour (sRGB), the share of where hair grows that its colour fills, and the head's
    region it was read in."""

    name: str
    rgb: tuple[int, int, int]
    share: float
    box: tuple[int, int, int, int]

    def evidence(self) -> str:
        return (f"hair read around the face, in the head's region at {list(self.box)}: the colour that fills "
                f"{self.share:.0%} of where hair grows, median RGB{self.rgb}, named as hair is: {self.name}")


def _lab(rgb: np.ndarray) -> np.ndarray:
    """CIE Lab (D65; L 0-100) of an (..., 3) uint8 sRGB array, by OpenCV."""
    arr = np.asarray(rgb, dtype=np.float32).reshape(-1, 1, 3) / 255.0
    return cv2.cvtColor(arr, cv2.COLOR_RGB2Lab).reshape(np.shape(rgb)).astype(np.float64)


def shade_name(rgb: Sequence[int]) -> str:
    """The name people give hair of median colour ``rgb`` (:data:`HAIR_NAMES`, by its Lab lightness and chroma)."""
    lightness, a, b = (float(v) for v in _lab(np.array(rgb, dtype=np.uint8)))
    chroma = float(np.hypot(a, b))
    if lightness < _BLACK_L or (lightness < 22.0 and chroma < _DARK_GRAY_C):
        return "black"
    if chroma >= _RED_C and a >= 0.8 * b:
        return "red"
    if lightness >= _FAIR_L and (chroma < _GRAY_C or lightness >= _WHITE_L and chroma < 1.5 * _GRAY_C):  # light: a warm cast
        return "white" if lightness >= _WHITE_L else "gray"
    return "blonde" if lightness >= _FAIR_L else "brown"


def head_region(face: Box, size: tuple[int, int]) -> tuple[int, int, int, int] | None:
    """The head's region around ``face`` (x1, y1, x2, y2) where its hair is looked for, clipped to the image ``size``;
    None when it is under 8 pixels on a side."""
    fx1, fy1, fx2, fy2 = face[:4]
    w, h = fx2 - fx1, fy2 - fy1
    box = (max(0, round(fx1 + _REGION[0] * w)), max(0, round(fy1 + _REGION[1] * h)),
           min(size[0], round(fx1 + _REGION[2] * w)), min(size[1], round(fy1 + _REGION[3] * h)))
    return box if box[2] - box[0] >= 8 and box[3] - box[1] >= 8 and fy1 - box[1] >= 0.1 * h else None


def _hair_prior(face: Box, band: tuple[int, int, int, int], shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Where hair is likely in the region (``shape`` pixels over ``band``): highest just above the face box's top and
    down its sides beside the upper face, falling off with the distance from the head's outline; zero inside the
    face box below its top fifth (the face itself); and the region outside the skull's outline above the face's
    middle, where the backdrop is."""
    hgt, wid = shape
    fx1, fy1, fx2, fy2 = face[:4]
    fw, fh = fx2 - fx1, fy2 - fy1
    xs = band[0] + (np.arange(wid) + 0.5) * (band[2] - band[0]) / wid
    ys = band[1] + (np.arange(hgt) + 0.5) * (band[3] - band[1]) / hgt
    u = (xs[None, :] - (fx1 + fx2) / 2) / (0.5 * fw)  # 0 on the face's centre line, 1 at its box's sides
    v = (ys[:, None] - (fy1 + fy2) / 2) / (0.5 * fh)  # 0 at the box's middle, -1 at its top
    rho = np.sqrt((u / 1.3) ** 2 + (np.minimum(v, 0) / 1.7) ** 2)  # 1 on the skull's outline (the box's top half)
    prior = np.exp(-(((rho - 0.85) / 0.18) ** 2)) * (v < 0.6)
    inside = (np.abs(u) < 0.85) & (v > -0.6)
    return np.where(inside, 0.0, prior), (rho > 1.1) & (v < 0)


def read_hair(image: Image.Image, face: Box) -> HairReading | None:
    """The hair around ``face`` in ``image``: the head's region (:func:`head_region`) clustered by colour (k-means in
    Lab); the cluster like the face's own skin is left out, and of the others the one that fills most of the places
    where hair grows (:func:`_hair_prior`: around the top of the face, not the region's corners, where the backdrop
    is) is the hair, named by :func:`shade_name` of its median colour. None when no cluster holds
    :data:`_MIN_SHARE` of that prior."""
    band = head_region(face, image.size)
    if band is None:
        return None
    photo = image.convert("RGB")
    crop = photo.crop(band)
    scale = _SIDE / max(crop.size)
    crop = crop.resize((max(4, round(crop.width * scale)), max(4, round(crop.height * scale))), Image.BILINEAR)
    rgb = np.asarray(crop)
    fx1, fy1, fx2, fy2 = (round(v) for v in face[:4])
    w, h = fx2 - fx1, fy2 - fy1
    centre = np.asarray(photo.crop((fx1 + round(0.3 * w), fy1 + round(0.45 * h), fx1 + round(0.7 * w), fy1 + round(0.75 * h))))
    if centre.size == 0:
        return None
    skin = _lab(np.median(centre.reshape(-1, 3), axis=0).astype(np.uint8))
    lab = _lab(rgb).reshape(-1, 3).astype(np.float32)
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 20, 0.5)
    cv2.setRNGSeed(0)  # the same photo reads the same every time
    _, labels, centres = cv2.kmeans(lab, _CLUSTERS, None, criteria, 3, cv2.KMEANS_PP_CENTERS)
    labels = labels.ravel()
    prior, outside = (a.ravel() for a in _hair_prior(face, band, rgb.shape[:2]))
    mass = np.bincount(labels, weights=prior, minlength=_CLUSTERS) / max(prior.sum(), 1e-9)
    if outside.any():  # a colour that fills the outside of the head is the backdrop's, not the hair's
        mass *= 1.0 - np.bincount(labels[outside], minlength=_CLUSTERS) / outside.sum()
    for k in range(_CLUSTERS):
        if np.linalg.norm(centres[k] - skin) < _SKIN_DELTA:
            mass[k] = 0.0  # the face's skin: a forehead, an ear
    best = int(np.argmax(mass))
    if mass[best] < _MIN_SHARE:
        return None
    pixels = rgb.reshape(-1, 3)[labels == best]
    median = tuple(int(v) for v in np.median(pixels, axis=0))
    return HairReading(shade_name(median), median, float(mass[best]), band)


_SAME = {"blond": "blonde", "grey": "gray", "ginger": "red", "silver": "gray"}  # other words for the same names


def hair_name(word: str) -> str | None:
    """The hair name (:data:`HAIR_NAMES`) ``word`` says ("blond" -> blonde, "grey" -> gray), or None."""
    key = word.strip().lower()
    key = _SAME.get(key, key)
    return key if key in HAIR_NAMES else None


def option_named(options: Sequence[str], name: str) -> str | None:
    """The option of a choice ("blonde or brown?") that says hair reading ``name``, as written; None if none does."""
    return next((o for o in options if hair_name(o) == name), None)


def pick_by_hair(people: Sequence[Image.Image], faces: Sequence[Box | None], names: Sequence[str]) -> int | None:
    """The index of the one person crop whose hair (read around ``faces[i]``, the face in crop ``i``'s pixels) is one of
    ``names`` ("the woman with blonde hair"); None when no one's or more than one's is, or no face is found."""
    said = [read_hair(p, f) if f is not None else None for p, f in zip(people, faces)]
    hits = [i for i, r in enumerate(said) if r is not None and r.name in names]
    return hits[0] if len(hits) == 1 else None


def names_hair(phrase: str | None) -> bool:
    """Whether a noun phrase's head word means hair (its main WordNet sense is hair.n.01: "hair", "her long hair";
    not "beard", whose place is under the face)."""
    if not phrase:
        return False
    sense = wn.main_sense(wn.singular(phrase.split()[-1]))
    return sense is not None and sense.name() == "hair.n.01"


__all__ = ["HAIR_NAMES", "HairReading", "hair_name", "head_region", "names_hair", "option_named", "pick_by_hair", "read_hair", "shade_name"]
