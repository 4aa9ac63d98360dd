"""The light a photo shows, from its pixels: by day or at night, under a clear sky or not.

No offline model sees the light of a scene, and the describe LLM sees no pixels: asked whether a photo under a
blue sky was taken by day or at night, or in sun or rain, it guesses. Two measures answer where they are clear:

- Night: the photo is dark as a whole and at its top, where the sky is, with no blue sky. A photo lit by its
  lamps keeps a dark sky and dark ground between them, so its median stays low however bright the lamps are.
- A clear sky: clear-sky blue (hue 185-250 degrees, saturated and bright) fills part of the photo's top third.
  Blue sky says the sun is out (sunny, not rainy or overcast) and that it is day.

What they cannot tell stays with the backend: a grey sky may be cloud or a white wall, a photo with no sky says
nothing of the weather, and a dim photo is not night. Thresholds are set from how the quantities behave (a night
scene's median luma is under a quarter, a daylight scene's over a third), not tuned to photos.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from hydra_vr.asked import LightAsked

SIDE = 256  # the photo is measured at this width: shares and medians do not need more
NIGHT_BELOW = 0.25  # median luma (0-1) of the photo and of its top third, both under this: night
DAY_FROM = 0.35  # median luma of the photo and of its top third, both at least this: day
SKY_FROM = 0.15  # share of the top third in clear-sky blue from which the sun is out
CLEAR_SKY_FROM = 0.40  # ... and from which the sky is clear (a yes/no of the sky's own state decides only then)
CLOUD_UNDER = 0.10  # share of the top third in bright colourless pixels (cloud) a clear sky stays under
_BLUE_HUE = (185.0, 250.0)  # degrees
_BLUE_SAT, _BLUE_VAL = 0.18, 0.45
_CLOUD_SAT, _CLOUD_VAL = 0.12, 0.60


@dataclass(frozen=True)
class Light:
    """What the pixels say of a photo's light: median luma (0-1) of the photo and of its top third, and the shares
    of the top third in clear-sky blue and in bright colourless pixels (cloud, or a white wall)."""

    brightness: float
    top_brightness: float
    blue_sky: float
    pale_sky: float

    @property
    def time(self) -> str | None:
        """"night", "day", or None when the measure is not clear."""
        if self.blue_sky < SKY_FROM / 3 and max(self.brightness, self.top_brightness) < NIGHT_BELOW:
            return "night"
        if self.blue_sky >= SKY_FROM or min(self.brightness, self.top_brightness) >= DAY_FROM:
            return "day"
        return None

    @property
    def sky(self) -> str | None:
        """"clear" (mostly blue, little cloud), "sunny" (blue sky in part of the top), or None: no blue sky says
        nothing (an overcast sky and a photo without sky look alike)."""
        if self.time == "night" or self.blue_sky < SKY_FROM:
            return None
        return "clear" if self.blue_sky >= CLEAR_SKY_FROM and self.pale_sky < CLOUD_UNDER else "sunny"

    def describe(self) -> str:
        return (f"median brightness {self.brightness:.2f} (top third {self.top_brightness:.2f}), blue sky in "
                f"{self.blue_sky:.0%} of the top third, pale sky or cloud in {self.pale_sky:.0%}")


def measure_light(image: Image.Image) -> Light:
    """The :class:`Light` of ``image`` (the whole photo)."""
    rgb = image.convert("RGB")
    height = max(3, round(SIDE * rgb.height / max(rgb.width, 1)))
    pixels = np.asarray(rgb.resize((SIDE, height), Image.Resampling.BILINEAR), dtype=np.uint8)
    hsv = cv2.cvtColor(pixels, cv2.COLOR_RGB2HSV).astype(np.float32)
    hue, sat, val = hsv[..., 0] * 2.0, hsv[..., 1] / 255.0, hsv[..., 2] / 255.0
    luma = pixels.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32) / 255.0
    top = slice(0, height // 3)
    blue = (hue >= _BLUE_HUE[0]) & (hue <= _BLUE_HUE[1]) & (sat >= _BLUE_SAT) & (val >= _BLUE_VAL)
    pale = (sat < _CLOUD_SAT) & (val >= _CLOUD_VAL)
    return Light(float(np.median(luma)), float(np.median(luma[top])), float(blue[top].mean()), float(pale[top].mean()))


def answer_light(image: Image.Image, asked: LightAsked) -> tuple[str, str] | None:
    """(answer, evidence) of the question ``asked`` about the whole photo ``image``, or None when the measure is not
    clear. Of the sky, a choice ("sunny or rainy?") is decided by blue sky alone; a yes/no about one pole ("Is it
    cloudy?") only by a clear sky, since a sunny sky may still hold clouds."""
    light = measure_light(image)
    if asked.measure == "time":
        found = light.time
    else:
        seen = light.sky
        found = "sunny" if seen == "clear" or (seen == "sunny" and not asked.needs_clear_sky) else None
    if found is None:
        return None
    answer = next((a for a, pole in asked.claims if pole == found), None)
    if answer is None:
        return None
    sky = "" if asked.measure == "time" else _CLEAR if light.sky == "clear" else "; blue sky in part of it"
    return answer, f"light measured: {light.describe()}{sky} -> {found}"


# The evidence line of answer_light ends with the pole it measured; a clear sky is said before it. The checks read a
# reply's evidence back (a trace keeps only the text), so the format is written and read here only.
_CLEAR = "; a clear sky"
_POLE = re.compile(r"-> (\w+)$")


def measured_pole(evidence: str) -> tuple[str, bool] | None:
    """(the pole, whether the sky was clear) that :func:`answer_light`'s ``evidence`` says; None for other text."""
    m = _POLE.search(evidence)
    return (m.group(1), _CLEAR in evidence) if m and evidence.startswith("light measured:") else None


__all__ = ["Light", "answer_light", "measure_light", "measured_pole"]
