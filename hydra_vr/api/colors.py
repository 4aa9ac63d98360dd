"""Colour naming from pixels: HSV rules over a centre-weighted crop.

No model is involved, so colour answers are measurable: the fraction of (centre-weighted) pixels
that fall into each named colour. The centre weighs more because a detection box also holds
background near its border.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from hydra_vr.api.types import ColorShare

BASE_COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray")
ALIASES = {
    "grey": "gray",
    "silver": "gray",
    "golden": "yellow",
    "gold": "yellow",
    "violet": "purple",
    "magenta": "pink",
    "navy": "blue",
    "cyan": "blue",
    "teal": "blue",
    "turquoise": "blue",
    "maroon": "red",
    "tan": "brown",
    "beige": "brown",
    "dark": "black",
    "light": "white",
}
_REF_RGB = {
    "red": (200, 30, 30),
    "orange": (240, 140, 20),
    "yellow": (240, 220, 30),
    "green": (40, 160, 50),
    "blue": (30, 80, 200),
    "purple": (120, 50, 160),
    "pink": (240, 150, 180),
    "brown": (120, 75, 40),
    "black": (15, 15, 15),
    "white": (245, 245, 245),
    "gray": (128, 128, 128),
}


def canonical_color(name: str) -> str | None:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    return key if key in BASE_COLORS else None


def is_color_name(name: str) -> bool:
    return canonical_color(name) is not None


def _pixel_names(hsv: np.ndarray) -> np.ndarray:
    """Index into BASE_COLORS for each pixel of an (..., 3) HSV array scaled to [0, 1]."""
    h, s, v = hsv[..., 0] * 360.0, hsv[..., 1], hsv[..., 2]
    idx = np.full(h.shape, BASE_COLORS.index("gray"), dtype=np.int64)
    chromatic = (s >= 0.22) & (v >= 0.22)
    hue_bins = [
        (0, 15, "red"),
        (15, 40, "orange"),
        (40, 70, "yellow"),
        (70, 165, "green"),
        (165, 255, "blue"),
        (255, 290, "purple"),
        (290, 340, "pink"),
        (340, 361, "red"),
    ]
    for lo, hi, name in hue_bins:
        idx[chromatic & (h >= lo) & (h < hi)] = BASE_COLORS.index(name)
    warm = chromatic & ((h < 45) | (h >= 340))
    idx[warm & (v < 0.6) & (s > 0.3) & (h >= 10) & (h < 45)] = BASE_COLORS.index("brown")
    idx[warm & (s < 0.45) & (v > 0.75) & ((h < 15) | (h >= 340))] = BASE_COLORS.index("pink")
    achrom = ~chromatic
    idx[achrom & (v < 0.22)] = BASE_COLORS.index("black")
    idx[achrom & (v >= 0.22) & (s < 0.22) & (v > 0.82)] = BASE_COLORS.index("white")
    idx[(v < 0.12)] = BASE_COLORS.index("black")
    return idx


def color_histogram(image: Image.Image, center_weight: bool = True) -> dict[str, float]:
    """Fraction of the patch in each base colour (sums to 1)."""
    img = image.convert("RGB")
    img.thumbnail((96, 96))
    hsv = np.asarray(img.convert("HSV"), dtype=np.float32) / 255.0
    names = _pixel_names(hsv)
    hgt, wid = names.shape
    if center_weight:
        yy, xx = np.mgrid[0:hgt, 0:wid]
        w = np.exp(-(((xx - (wid - 1) / 2) / (0.35 * wid)) ** 2 + ((yy - (hgt - 1) / 2) / (0.35 * hgt)) ** 2))
    else:
        w = np.ones_like(names, dtype=np.float64)
    totals = np.bincount(names.ravel(), weights=w.ravel(), minlength=len(BASE_COLORS))
    totals = totals / max(totals.sum(), 1e-9)
    return {name: float(totals[i]) for i, name in enumerate(BASE_COLORS)}


def dominant_colors(image: Image.Image, top_k: int = 3) -> list[ColorShare]:
    hist = color_histogram(image)
    ranked = sorted(hist.items(), key=lambda kv: kv[1], reverse=True)[:top_k]
    return [ColorShare(name, frac, _REF_RGB[name]) for name, frac in ranked if frac > 0]


def has_color(image: Image.Image, color: str, min_fraction: float = 0.2) -> tuple[bool, str]:
    """True when ``color`` covers at least ``min_fraction`` of the patch or is its main colour."""
    canon = canonical_color(color)
    if canon is None:
        raise ValueError(f"{color!r} is not a colour name this tool knows ({', '.join(BASE_COLORS)})")
    hist = color_histogram(image)
    top = max(hist, key=hist.get)
    verdict = hist[canon] >= min_fraction or top == canon
    shares = ", ".join(f"{n} {hist[n]:.0%}" for n in sorted(hist, key=hist.get, reverse=True)[:3])
    return verdict, f"pixel colours: {shares}"


def best_color_match(image: Image.Image, options: list[str]) -> str:
    hist = color_histogram(image)
    return max(options, key=lambda o: hist.get(canonical_color(o) or "", 0.0))
