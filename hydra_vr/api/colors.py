"""Colour naming from pixels: HSV rules over the object's own pixels, or a centre-weighted crop.

No model is involved, so colour answers are measurable: the fraction of pixels that fall into each
named colour. A detection box also holds background, so for an object patch the object is first
separated from its box by colour contrast with the box border (histogram back-projection: a colour
that is more common inside the box than along its border belongs to the object) and only its
pixels are counted. A scene (the whole image), or an object whose mask comes out degenerate (almost
nothing or almost the whole box), is read centre-weighted instead, and the result says which.

Why not GrabCut: detection boxes are tight, so the border strip GrabCut takes as background holds
the object's colours too. On 12 detector boxes of the sample photos, GrabCut (rectangle inset 6%,
3 iterations, 96 px) left 9 with a mask under 1% of the box (nothing to read) at 4-20 ms each;
seeding a definite-foreground core kept masks but drew them to the box centre (faces, the surface of
a drink). Back-projection raised the object's colour share on them at 1-2 ms per box (see
benchmarks/bench_colors.py). A side of the box that lies on the photo's frame cuts the object (a
close-up, a portrait), so its strip is not taken as background (the crop says which sides: ``api.types``).
Its limit: an object whose colour also fills the strip of a side inside the photo loses that colour.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from PIL import Image

from hydra_vr.api.types import NO_SIDES, ColorShare, Sides, frame_sides, is_object_crop
from hydra_vr.lexicon import wordnet as wn  # loads WordNet on first use only
from hydra_vr.lexicon.words import GENERIC_NOUNS, REGION_NOUNS, one_of

# teal: blue-green (hue 165-195), a colour of its own; named blue, a close-up's dark teal backdrop was "black
# and blue" (a person says green or teal) and easy-VQA's teal shapes were blue.
BASE_COLORS = ("red", "orange", "yellow", "green", "teal", "blue", "purple", "pink", "brown", "black", "white", "gray")
ALIASES = {
    "grey": "gray",
    "silver": "gray",
    "golden": "yellow",
    "gold": "yellow",
    "violet": "purple",
    "magenta": "pink",
    "navy": "blue",
    "cyan": "teal",
    "turquoise": "teal",
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
    "teal": (0, 128, 128),
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


# hue ranges in degrees, [lo, hi), of a chromatic pixel's name
_HUE_BINS = ((0, 15, "red"), (15, 40, "orange"), (40, 70, "yellow"), (70, 165, "green"), (165, 195, "teal"),
             (195, 255, "blue"), (255, 290, "purple"), (290, 340, "pink"), (340, 361, "red"))
_OLIVE_HUE, _OLIVE_V = 55.0, 0.5  # a yellow hue from here to green, darker than this: olive, which reads green


def _pixel_names(hsv: np.ndarray) -> np.ndarray:
    """Index into BASE_COLORS for each pixel of an (..., 3) HSV array scaled to [0, 1]."""
    h, s, v = hsv[..., 0] * 360.0, hsv[..., 1], hsv[..., 2]
    idx = np.full(h.shape, BASE_COLORS.index("gray"), dtype=np.int64)
    # a dark pixel of strong colour keeps its hue: a person calls it dark green, not black (a close-up's
    # backdrop of dark leaves, V 0.16-0.22 and S over 0.5, was read "black 47%, teal 40%")
    chromatic = (s >= 0.22) & (v >= 0.22) | (s >= 0.5) & (v >= 0.16)
    for lo, hi, name in _HUE_BINS:
        idx[chromatic & (h >= lo) & (h < hi)] = BASE_COLORS.index(name)
    # a vivid, bright red-orange (hue 12-15) is orange to a person: an orange flight suit under studio light
    # measured hue 12.7-15.5 at S 0.7, V 0.86 and read "red 39%"; a dimmer or paler pixel there is shaded red
    idx[chromatic & (h >= 12) & (h < 15) & (s >= 0.55) & (v >= 0.6)] = BASE_COLORS.index("orange")
    # Yellow is seen only in light: a dark pixel of a green-ward yellow hue looks olive, which a person calls green
    # (grass and leaves in shade, hue 56-73 at V 0.24-0.49, read "yellow 81%"). A dark orange-ward yellow (a yellow
    # car's shaded side) stays yellow.
    yellow_top = next(hi for _, hi, name in _HUE_BINS if name == "yellow")
    idx[chromatic & (h >= _OLIVE_HUE) & (h < yellow_top) & (v < _OLIVE_V)] = BASE_COLORS.index("green")
    warm = chromatic & ((h < 45) | (h >= 340))
    idx[warm & (v < 0.6) & (s > 0.3) & (h >= 10) & (h < 45)] = BASE_COLORS.index("brown")
    idx[warm & (s < 0.45) & (v > 0.75) & ((h < 15) | (h >= 340))] = BASE_COLORS.index("pink")
    achrom = ~chromatic
    idx[achrom & (v < 0.22)] = BASE_COLORS.index("black")
    idx[achrom & (v >= 0.22) & (s < 0.22) & (v > 0.82)] = BASE_COLORS.index("white")
    idx[(v < 0.12)] = BASE_COLORS.index("black")
    return idx


def pixel_names(rgb: np.ndarray) -> np.ndarray:
    """Index into BASE_COLORS of each pixel of an HxWx3 uint8 RGB array."""
    return _pixel_names(np.asarray(Image.fromarray(rgb).convert("HSV"), dtype=np.float32) / 255.0)


CENTER = "center"  # every pixel of the patch, the centre weighing more
FOREGROUND = "foreground"  # only the pixels of the object's mask

_THUMB_SIDE = 96  # colours (and the object mask) are computed on at most 96x96 pixels
_MIN_MASK_SIDE = 12  # a box thinner than this (after downscaling) is not segmented
_BORDER = 0.08  # the border strip (share of each side) that samples the background's colours
_LEVELS = 8  # RGB levels per channel of the colour histograms (8**3 bins)
_MASK_MIN_SHARE = 0.05  # a mask under 5% of the box is "almost empty"
_MASK_MAX_INNER = 0.97  # a mask over 97% of the box inside its border strip is "almost everything"


@dataclass(frozen=True)
class ColorReading:
    """Colour shares of a patch and which of its pixels they were counted over.

    ``source`` is FOREGROUND (the object's mask only) or CENTER (all pixels, centre-weighted);
    ``mask_share`` is the share of the box the object mask covers (None: no mask was made);
    ``note`` says why this source was used, for an honest textual report.
    """

    histogram: dict[str, float]
    source: str
    mask_share: float | None
    note: str

    def shares(self, top_k: int = 3) -> list[ColorShare]:
        ranked = sorted(self.histogram.items(), key=lambda kv: kv[1], reverse=True)[:top_k]
        return [ColorShare(name, frac, _REF_RGB[name]) for name, frac in ranked if frac > 0]

    def top(self) -> str:
        return max(self.histogram, key=self.histogram.get)

    def has(self, color: str, min_fraction: float = 0.2) -> bool:
        """True when the base colour ``color`` covers ``min_fraction`` of the pixels or is the top one."""
        return self.histogram[color] >= min_fraction or self.top() == color

    def to_dict(self, top_k: int = 3) -> dict[str, Any]:
        return {
            "source": self.source,
            "mask_share": None if self.mask_share is None else round(self.mask_share, 4),
            "note": self.note,
            "colors": [c.to_dict() for c in self.shares(top_k)],
        }


def _thumbnail(image: Image.Image) -> np.ndarray:
    img = image.convert("RGB")
    img.thumbnail((_THUMB_SIDE, _THUMB_SIDE))
    return np.asarray(img)


def _center_weights(hgt: int, wid: int) -> np.ndarray:
    yy, xx = np.mgrid[0:hgt, 0:wid]
    return np.exp(-(((xx - (wid - 1) / 2) / (0.35 * wid)) ** 2 + ((yy - (hgt - 1) / 2) / (0.35 * hgt)) ** 2))


_SHADED_WHITE_V = 0.6  # a light gray from here up may be a white surface in shade


def _histogram(rgb: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    hsv = np.asarray(Image.fromarray(rgb).convert("HSV"), dtype=np.float32) / 255.0
    names = _pixel_names(hsv)
    # Lightness constancy: where a region reads white at least as much as light gray, its light gray is the same
    # white surface in shade (snow in a hollow, the shaded side of a white van), as a person sees it; a gray thing
    # with a few white highlights, or a mid-gray one, keeps its gray.
    gray, white = BASE_COLORS.index("gray"), BASE_COLORS.index("white")
    light_gray = (names == gray) & (hsv[..., 2] >= _SHADED_WHITE_V)
    if weights[names == white].sum() >= weights[light_gray].sum() > 0:
        names = np.where(light_gray, white, names)
    totals = np.bincount(names.ravel(), weights=weights.ravel(), minlength=len(BASE_COLORS))
    totals = totals / max(totals.sum(), 1e-9)
    return {name: float(totals[i]) for i, name in enumerate(BASE_COLORS)}


def color_histogram(image: Image.Image, center_weight: bool = True) -> dict[str, float]:
    """Fraction of the patch in each base colour (sums to 1)."""
    rgb = _thumbnail(image)
    hgt, wid = rgb.shape[:2]
    weights = _center_weights(hgt, wid) if center_weight else np.ones((hgt, wid))
    return _histogram(rgb, weights)


def _border(hgt: int, wid: int, leave_out: Sides = NO_SIDES) -> np.ndarray:
    """The border strip of each side (left, top, right, bottom) not in ``leave_out``."""
    dx, dy = max(1, round(_BORDER * wid)), max(1, round(_BORDER * hgt))
    border = np.zeros((hgt, wid), bool)
    left, top, right, bottom = (not s for s in leave_out)
    border[:, :dx] |= left
    border[:dy] |= top
    border[:, wid - dx :] |= right
    border[hgt - dy :] |= bottom
    return border


def foreground_mask(rgb: np.ndarray, rounds: int = 2, on_frame: Sides = NO_SIDES) -> np.ndarray:
    """Boolean mask of the object in an HxWx3 uint8 RGB crop of its box.

    A detection box is tight, so what runs along its border is mostly background. Each pixel's
    colour is scored by how much more often it occurs inside the box (centre-weighted: the object
    sits there) than along the border; pixels scoring above even are the object. Each further
    round re-estimates both colour models from the last mask (the interior left out of it joins
    the background at half weight), as GrabCut does with its colour models. The border strip itself
    is never counted. A uniform patch scores exactly even everywhere, so its mask is empty.
    ``on_frame`` (left, top, right, bottom): the sides on the photo's frame, whose strips are the object
    cut by the frame and sample no background (unless every side is: then all of them do).
    """
    hgt, wid = rgb.shape[:2]
    border = _border(hgt, wid)
    sample = _border(hgt, wid, on_frame) if not all(on_frame) else border
    q = (rgb.astype(np.int64) * _LEVELS) >> 8
    bins = ((q[..., 0] * _LEVELS + q[..., 1]) * _LEVELS + q[..., 2]).ravel()
    center = _center_weights(hgt, wid)
    fg_weights, bg_weights = center * ~border, sample.astype(np.float64)
    mask = np.zeros((hgt, wid), bool)
    for _ in range(rounds):
        h_bg = np.bincount(bins, weights=bg_weights.ravel(), minlength=_LEVELS**3)
        h_fg = np.bincount(bins, weights=fg_weights.ravel(), minlength=_LEVELS**3)
        if h_fg.sum() <= 0:
            break
        # + 1e-3: a colour absent from one side still gets a small, finite probability there.
        h_bg, h_fg = h_bg / h_bg.sum() + 1e-3, h_fg / h_fg.sum() + 1e-3
        mask = ((h_fg / (h_fg + h_bg))[bins].reshape(hgt, wid) > 0.5 + 1e-6) & ~border
        # Opening drops isolated specks of an object colour in the background without growing the mask.
        mask = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, np.ones((2, 2), np.uint8)).astype(bool)
        fg_weights, bg_weights = center * mask, sample + 0.5 * (~mask & ~border)
    return mask


def read_colors(image: Image.Image, *, foreground: bool = False) -> ColorReading:
    """Colour shares of ``image``: over the object's mask when ``foreground`` (an object's box),
    else centre-weighted over the whole patch (a scene). A degenerate mask falls back to the latter.
    """
    rgb = _thumbnail(image)
    hgt, wid = rgb.shape[:2]
    center = _center_weights(hgt, wid)
    if not foreground:
        return ColorReading(_histogram(rgb, center), CENTER, None, "whole patch, centre-weighted")
    if min(hgt, wid) < _MIN_MASK_SIDE:
        return ColorReading(_histogram(rgb, center), CENTER, None, "box too thin to segment, centre-weighted")
    mask = foreground_mask(rgb, on_frame=frame_sides(image) if is_object_crop(image) else NO_SIDES)
    share = float(mask.mean())
    inner = float(mask[~_border(hgt, wid)].mean())
    if share < _MASK_MIN_SHARE or inner > _MASK_MAX_INNER:
        note = f"object mask degenerate ({share:.0%} of the box), centre-weighted"
        return ColorReading(_histogram(rgb, center), CENTER, share, note)
    return ColorReading(_histogram(rgb, mask.astype(np.float64)), FOREGROUND, share, "object mask")


def border_colors(image: Image.Image, top_k: int = 3) -> list[ColorShare]:
    """Colour shares of the patch's border strip: what the background of a scene is made of."""
    rgb = _thumbnail(image)
    border = _border(*rgb.shape[:2])
    return ColorReading(_histogram(rgb, border.astype(np.float64)), CENTER, None, "border strip").shares(top_k)


def standout_colors(image: Image.Image, top_k: int = 3, min_share: float = 0.002) -> list[ColorShare]:
    """Colours of the pixels whose named colour is not one of the border's main colours.

    For a scene where a thing the detector cannot find should be the subject: a small red shape on a
    white page is 1% of the patch (under any share threshold of the whole-patch colours) and too
    small for :func:`foreground_mask`, but it is all of what differs from the border. Empty when
    under ``min_share`` of the patch differs (nothing stands out).
    """
    rgb = _thumbnail(image)
    hgt, wid = rgb.shape[:2]
    names = pixel_names(rgb)
    border = _border(hgt, wid)
    counts = np.bincount(names[border], minlength=len(BASE_COLORS)) / max(int(border.sum()), 1)
    background = np.flatnonzero(counts >= 0.25)  # the border's main colours
    standout = ~np.isin(names, background)
    if standout.mean() < min_share:
        return []
    totals = np.bincount(names[standout], minlength=len(BASE_COLORS)) / standout.sum()
    ranked = sorted(range(len(BASE_COLORS)), key=lambda i: totals[i], reverse=True)[:top_k]
    return [ColorShare(BASE_COLORS[i], float(totals[i]), _REF_RGB[BASE_COLORS[i]]) for i in ranked if totals[i] > 0]


def standout_region(image: Image.Image, min_share: float = 0.01) -> tuple[tuple[float, float, float, float], float] | None:
    """The box (``image`` pixels) of what stands out from the patch's border by colour, and its share of the patch.

    The scene's colour-contrast mask (:func:`foreground_mask` over the whole patch: colours commoner inside than
    along the border); the box spans its 2nd to 98th percentile in each axis, so stray specks do not stretch it.
    For a photo of one subject on a backdrop this is the subject. None when under ``min_share`` stands out.
    """
    rgb = _thumbnail(image)
    hgt, wid = rgb.shape[:2]
    if min(hgt, wid) < _MIN_MASK_SIDE:
        return None
    mask = foreground_mask(rgb)
    share = float(mask.mean())
    if share < min_share:
        return None
    ys, xs = np.nonzero(mask)
    (x1, x2), (y1, y2) = np.percentile(xs, [2, 98]), np.percentile(ys, [2, 98])
    sx, sy = image.width / wid, image.height / hgt
    return (float(x1 * sx), float(y1 * sy), float(min(image.width, (x2 + 1) * sx)), float(min(image.height, (y2 + 1) * sy))), share


def dominant_colors(image: Image.Image, top_k: int = 3, *, foreground: bool = False) -> list[ColorShare]:
    """The ``top_k`` named colours of ``image``; ``foreground=True`` for an object's box crop."""
    return read_colors(image, foreground=foreground).shares(top_k)


def evidence(reading: ColorReading) -> str:
    """Short evidence for a colour verdict: which pixels were counted and the top three shares."""
    shares = ", ".join(f"{c.name} {c.fraction:.0%}" for c in reading.shares(3))
    if reading.source == FOREGROUND and reading.mask_share is not None:
        return f"pixel colours of the object mask ({reading.mask_share:.0%} of the box): {shares}"
    return f"pixel colours ({reading.note}): {shares}"


def has_color(
    image: Image.Image, color: str, min_fraction: float = 0.2, *, foreground: bool = False
) -> tuple[bool, str]:
    """True when ``color`` covers at least ``min_fraction`` of the patch (or its object) or is its main colour."""
    canon = canonical_color(color)
    if canon is None:
        raise ValueError(f"{color!r} is not a colour name this tool knows ({', '.join(BASE_COLORS)})")
    reading = read_colors(image, foreground=foreground)
    return reading.has(canon, min_fraction), evidence(reading)


def match_color(reading: ColorReading, options: list[str]) -> str:
    """The option whose colour covers most of the reading's pixels."""
    return max(options, key=lambda o: reading.histogram.get(canonical_color(o) or "", 0.0))


def best_color_match(image: Image.Image, options: list[str], *, foreground: bool = False) -> str:
    return match_color(read_colors(image, foreground=foreground), options)


# Words that, after colour words, still name no kind of thing: "find('red thing')" is find('red'), and so is
# find('red regions'); the generic and region nouns are the lexicon's (``lexicon.words``).
_COLOUR_NOUNS = frozenset({"color", "colour", "colored", "coloured"})
_REGION_SIDE = 256  # regions are searched on at most 256x256 pixels (a coin-sized spot in a photo survives)
_REGION_MIN_SHARE = 0.002  # a region under 0.2% of the image is a speck, not a thing
_REGION_MAX_BORDER = 0.5  # a region along more than half of the image border is the backdrop, not a thing


def region_colors(name: str) -> tuple[str, ...]:
    """The base colours a name asks for when it names nothing but colour: "red" -> ("red",),
    "red and white thing" -> ("red", "white"), "red shape" / "red car" / "dog" -> () (a kind of thing)."""
    words = [w for w in re.findall(r"[a-z]+", name.lower()) if w not in {"and", "or", "a", "an", "the", "any", "some"}]
    colours = [canonical_color(w) for w in words
               if w not in _COLOUR_NOUNS and not one_of(w, GENERIC_NOUNS | REGION_NOUNS)]
    if not colours or any(c is None for c in colours):
        return ()
    return tuple(dict.fromkeys(c for c in colours if c is not None))


def head_colors(name: str) -> tuple[str, ...]:
    """The colour words that describe the thing a name names: those before its first other noun ("dark blue car"
    -> ("blue",), the shade dropped; "red and white bus" -> ("red", "white")). A colour after the noun describes
    something else ("man in red shirt" -> ()); a name of colours only names no thing (:func:`region_colors`)."""
    colours: list[str] = []
    previous = ""
    for word in re.findall(r"[a-z]+", name.lower()):
        if is_color_name(word):
            if colours and previous == colours[-1]:
                colours.pop()  # "dark blue", "light green": the first word shades the second
            colours.append(word)
        elif (wn.is_noun(word) and not wn.is_adjective(word)  # "dark", "light": a shade, not the thing
              and not one_of(word, GENERIC_NOUNS | REGION_NOUNS) and word not in _COLOUR_NOUNS):
            return tuple(dict.fromkeys(colours))
        previous = word
    return ()


def color_regions(image: Image.Image, color: str, *, max_regions: int = 20) -> list[tuple[tuple[float, float, float, float], float]]:
    """Connected regions of pixels named ``color``: ``[(box [x1, y1, x2, y2] in image pixels, share), ...]``,
    largest first; ``share`` is the region's share of all the pixels of that colour in the regions kept
    (a big yellow umbrella holds most of a photo's yellow; a speck almost none).

    What runs along most of the image border is the backdrop (the page of a diagram, a wall), never a
    thing; an opening first drops one-pixel rims (a red shape's anti-aliased edge reads pink).
    """
    canon = canonical_color(color)
    if canon is None:
        raise ValueError(f"{color!r} is not a colour name this tool knows ({', '.join(BASE_COLORS)})")
    img = image.convert("RGB")
    scale = min(1.0, _REGION_SIDE / max(img.size))
    if scale < 1.0:
        img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.BILINEAR)
    mask = (pixel_names(np.asarray(img)) == BASE_COLORS.index(canon)).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3)))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    hgt, wid = mask.shape
    ring = np.zeros((hgt, wid), bool)
    ring[0], ring[-1], ring[:, 0], ring[:, -1] = True, True, True, True
    on_ring = np.bincount(labels[ring], minlength=count) / ring.sum()
    out = []
    for i in range(1, count):
        x, y, w, h, area = (int(v) for v in stats[i])
        if area < max(4, _REGION_MIN_SHARE * hgt * wid) or on_ring[i] > _REGION_MAX_BORDER:
            continue
        box = (x / scale, y / scale, min(image.width, (x + w) / scale), min(image.height, (y + h) / scale))
        out.append((box, area))
    out.sort(key=lambda r: r[1], reverse=True)
    total = float(sum(area for _, area in out)) or 1.0
    return [(box, area / total) for box, area in out[:max_regions]]
