"""The light of a photo from its pixels: day or night, and whether its sky is clear.

No offline model sees the time of day or the weather, and the describe LLM sees no pixels: asked "day or
night?" beside findings that held no brightness, a small model said "night" of a photo under a bright blue
sky. The sky of an outdoor photo lies along its top: a daylit sky there is bright and smooth (few edges),
a clear one blue as well; a night photo is dark all over, its top included.

The toolbox asks this module before any VQA backend, like ``api.focus``, with what the question frame read
(:class:`hydra_vr.asked.LightAsked`: the pole each answer claims). It decides only what the pixels show
clearly: day, night, and a clear sky. A white or grey sky is no evidence of clouds (a sunny sky over-exposes
white), so "cloudy" and a rainy day are never decided here; the backend answers those.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from hydra_vr.api.colors import BASE_COLORS, pixel_names
from hydra_vr.asked import LightAsked

SIDE = 160  # the photo is measured at this width
TOP_BAND = 0.2  # the top fifth of the photo: where an outdoor photo's sky is
# A daylit sky is bright (HSV value) and smooth; a night photo is dark all over. Set from what the values mean
# (V 0.5 is mid-grey; a night sky is near black), not fitted to photos.
DAY_TOP_FROM = 0.5
SMOOTH_FROM = 0.6  # share of the top band without edges that a sky has
NIGHT_BELOW = 0.25
CLEAR_FROM = 0.5  # share of the top band that is blue (at daylight brightness) for a clear sky
_EDGE = 40.0  # Sobel magnitude (grey levels at SIDE) above which a pixel is an edge, not sky
_BLUE = tuple(BASE_COLORS.index(c) for c in ("blue", "teal"))
_SKY = tuple(BASE_COLORS.index(c) for c in ("blue", "teal", "white", "gray"))  # a sky's colours; walls are warm too


@dataclass(frozen=True)
class Light:
    """The light measures of a photo: its median brightness, and of its top band (``TOP_BAND``) the median
    brightness, the share without edges (``smooth``), the share of a sky's colours (``sky_colored``: blue, teal,
    white, grey) and of bright blue pixels (``blue``)."""

    brightness: float
    top_brightness: float
    smooth: float
    sky_colored: float
    blue: float

    @property
    def period(self) -> str | None:
        """"day", "night", or None when the pixels do not tell (a dim room, a scene with no sky along its top)."""
        if self.top_brightness >= DAY_TOP_FROM and self.smooth >= SMOOTH_FROM and self.sky_colored >= SMOOTH_FROM:
            return "day"
        if self.brightness < NIGHT_BELOW and self.top_brightness < NIGHT_BELOW:
            return "night"
        return None

    @property
    def sky(self) -> str | None:
        """"clear" for a bright, blue, smooth top band (a clear day sky); None otherwise (a white sky tells nothing)."""
        return "clear" if self.period == "day" and self.blue >= CLEAR_FROM else None

    def describe(self) -> str:
        return (f"photo brightness {self.brightness:.2f}; its top fifth: brightness {self.top_brightness:.2f}, "
                f"{self.smooth:.0%} without edges, {self.sky_colored:.0%} a sky's colours, {self.blue:.0%} bright blue")


def measure_light(image: Image.Image) -> Light:
    """The :class:`Light` of ``image`` (the whole photo)."""
    rgb = image.convert("RGB")
    rgb = np.asarray(rgb.resize((SIDE, max(5, round(SIDE * rgb.height / rgb.width))), Image.BILINEAR))
    value = rgb.max(axis=2).astype(np.float32) / 255.0
    top = max(1, round(TOP_BAND * rgb.shape[0]))
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    edges = np.hypot(cv2.Sobel(gray, cv2.CV_32F, 1, 0), cv2.Sobel(gray, cv2.CV_32F, 0, 1))[:top]
    names = pixel_names(rgb[:top])
    blue = np.isin(names, _BLUE) & (value[:top] >= DAY_TOP_FROM)
    return Light(brightness=float(np.median(value)), top_brightness=float(np.median(value[:top])),
                 smooth=float((edges < _EDGE).mean()), sky_colored=float(np.isin(names, _SKY).mean()), blue=float(blue.mean()))


def answer_light(image: Image.Image, asked: LightAsked) -> tuple[str, str] | None:
    """(answer, evidence) for a question about the light (``asked``: the pole each answer claims) where the
    pixels decide it; None otherwise."""
    light = measure_light(image)
    measured = {p for p in (light.period, light.sky) if p is not None}
    return next(((answer, f"{light.describe()}: {pole}") for answer, pole in asked.claims if pole in measured), None)


__all__ = ["Light", "answer_light", "measure_light"]
