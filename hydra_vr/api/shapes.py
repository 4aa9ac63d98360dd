"""Geometric shapes from pixels: circles, triangles and rectangles by their outlines (no model).

A closed-set detector has no class for round things (coins, wheels, a round sign or patch) or for
the plain shapes of diagrams, so ``find("coin")`` used to come back empty for a reason that says
nothing about the scene. Outlines can be measured: circles by OpenCV's gradient Hough transform
(``HOUGH_GRADIENT_ALT``, whose threshold is how perfect a circle must be, so textured scenes yield
few false circles), polygons by the contours of an edge map simplified with ``approxPolyDP``.

A hit says "a circle is here", never "a coin is here": callers label detections with the kind,
so the reasoner reads what was measured. Names are routed here in one table (:func:`shape_kinds`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from hydra_vr.api import colors as color_ops
from hydra_vr.api.types import Box, is_object_crop

SHAPE_KINDS = ("circle", "triangle", "rectangle")
CIRCLE_SHARE = 0.6  # a circle is kept when its outline fits at least this share as well as the best circle's

# Nouns for things that are round whatever they are made of; a closed-set detector has no class for them.
_ROUND_NOUNS = frozenset({
    "circle", "coin", "wheel", "tire", "tyre", "disc", "disk", "button", "dot", "ring", "medal", "token",
    "round", "sphere", "orb",
})
_KIND_WORDS = {
    "circle": "circle", "circular": "circle", "round": "circle",
    "triangle": "triangle", "triangular": "triangle",
    "rectangle": "rectangle", "rectangular": "rectangle", "square": "rectangle", "oblong": "rectangle",
}
_ALL_WORDS = frozenset({"shape", "figure", "form"})


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def shape_kinds(name: str) -> tuple[str, ...]:
    """The shape kinds an object name asks for: "coins" -> circle, "round sign" -> circle,
    "triangle" -> triangle, "shape" -> all; () for names that are no shape ("dog", "sign")."""
    words = [_singular(w) for w in re.findall(r"[a-z]+", name.lower())]
    if not words:
        return ()
    head = words[-1]
    if head in _ALL_WORDS:
        kinds = tuple(dict.fromkeys(_KIND_WORDS[w] for w in words[:-1] if w in _KIND_WORDS))
        return kinds or SHAPE_KINDS
    if head in _KIND_WORDS:
        return (_KIND_WORDS[head],)
    if head in _ROUND_NOUNS:
        return ("circle",)
    # "round traffic sign", "square window": the adjective says the outline to look for.
    adjectives = [_KIND_WORDS[w] for w in words[:-1] if w in _KIND_WORDS]
    return (adjectives[0],) if adjectives else ()


@dataclass(frozen=True)
class ShapeHit:
    box: Box
    kind: str
    score: float  # how well the outline fits the kind, 0..1


def _edge_support(edges: np.ndarray, x: float, y: float, r: float) -> float:
    """Share of the circle's circumference that lies on an edge pixel of ``edges``."""
    n = max(24, int(2 * math.pi * r))
    t = np.linspace(0, 2 * math.pi, n, endpoint=False)
    xs, ys = np.round(x + r * np.cos(t)).astype(int), np.round(y + r * np.sin(t)).astype(int)
    h, w = edges.shape
    inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    if inside.sum() < n * 0.5:  # mostly outside the image: not a circle we can vouch for
        return 0.0
    return float(edges[ys[inside], xs[inside]].mean() / 255.0)


def _circles(gray: np.ndarray, edges: np.ndarray, perfectness: float) -> list[ShapeHit]:
    side = min(gray.shape)
    blurred = cv2.GaussianBlur(gray, (5, 5), 0)
    found = cv2.HoughCircles(blurred, cv2.HOUGH_GRADIENT_ALT, dp=1.5, minDist=max(4.0, side * 0.05), param1=150,
                             param2=perfectness, minRadius=max(3, int(side * 0.03)), maxRadius=int(side * 0.5))
    hits = []
    for x, y, r in ([] if found is None else found[0]):
        score = _edge_support(edges, x, y, r)
        if score >= 0.3:
            hits.append(ShapeHit(Box(x - r, y - r, x + r, y + r), "circle", score))
    return hits


def _polygons(gray: np.ndarray, edges: np.ndarray, kinds: tuple[str, ...]) -> list[ShapeHit]:
    h, w = gray.shape
    min_area = h * w * 0.002
    closed = cv2.dilate(edges, np.ones((3, 3), np.uint8))
    contours, _ = cv2.findContours(closed, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    hits = []
    for c in contours:
        area = cv2.contourArea(c)
        if area < min_area or area > h * w * 0.95:
            continue
        hull_area = cv2.contourArea(cv2.convexHull(c))
        solidity = area / hull_area if hull_area else 0.0
        if solidity < 0.9:
            continue
        peri = cv2.arcLength(c, True)
        approx = cv2.approxPolyDP(c, 0.04 * peri, True)
        x, y, bw, bh = cv2.boundingRect(c)
        box = Box(x, y, x + bw, y + bh)
        n = len(approx)
        circularity = 4 * math.pi * area / (peri * peri) if peri else 0.0
        if n == 3 and "triangle" in kinds:
            hits.append(ShapeHit(box, "triangle", solidity))
        elif n == 4 and "rectangle" in kinds and cv2.isContourConvex(approx) and _right_angles(approx):
            hits.append(ShapeHit(box, "rectangle", solidity))
        elif n >= 6 and circularity >= 0.85 and "circle" in kinds and 0.8 <= bw / max(bh, 1) <= 1.25:
            hits.append(ShapeHit(box, "circle", min(1.0, circularity)))
    return hits


def _right_angles(quad: np.ndarray, tolerance: float = 0.25) -> bool:
    pts = quad.reshape(4, 2).astype(float)
    for i in range(4):
        a, b, c = pts[i - 1], pts[i], pts[(i + 1) % 4]
        u, v = a - b, c - b
        cos = abs(float(u @ v)) / (np.linalg.norm(u) * np.linalg.norm(v) + 1e-9)
        if cos > tolerance:
            return False
    return True


def _only_rims(mask: np.ndarray, side: int) -> bool:
    """True when ``mask`` holds nothing thicker than ``side`` pixels (anti-aliased rims, not a shape)."""
    kernel = np.ones((side + 1, side + 1), np.uint8)
    # outside the patch counts as empty: by default erosion takes it as full and keeps rims along the edge
    opened = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=0)
    return not opened.any()


def _silhouette(image: Image.Image, kinds: tuple[str, ...]) -> list[ShapeHit]:
    """The outline of a patch cropped to its object (a ``find()`` result), whose edge runs along the
    patch's edge where no contour closes: the object's colour is the main one of its colour-contrast
    mask (as for its colours), its silhouette every pixel of that colour, and its kind the outline
    that fits the silhouette best (filled share of the smallest enclosing circle, triangle, rectangle).
    Only for a silhouette touching at least three sides of the patch. A patch of one colour all over is
    a rectangle filling the patch."""
    rgb = np.asarray(image.convert("RGB"))
    h, w = rgb.shape[:2]
    if min(h, w) < 4:
        return []
    up = max(1.0, 64 / min(h, w))  # a 10-px crop of a diagram: room for the mask's border strip
    rgb = cv2.resize(rgb, (round(w * up), round(h * up)), interpolation=cv2.INTER_NEAREST)
    names = color_ops.pixel_names(rgb)
    main = np.bincount(names.ravel()).argmax()
    if (names == main).mean() >= 0.6 and _only_rims(names != main, side=math.ceil(up)):
        # one colour all over but for rims one pixel thin (anti-aliasing): a rectangle filling
        # the patch; a page with a small shape on it is mostly one colour too, but the shape is thick
        return [ShapeHit(Box(0, 0, w, h), "rectangle", 0.5)] if "rectangle" in kinds else []
    inner = color_ops.foreground_mask(rgb)  # leaves out the border strip, where the object's edge is
    if inner.mean() < 0.05:
        return []
    subject = np.bincount(names[inner]).argmax()  # the object's colour; all its pixels are the silhouette
    mask = (names == subject).astype(np.float32)
    # Enlarged pixels are blocks: a blur as wide as one original pixel turns the steps back into the edge.
    mask = cv2.GaussianBlur(mask, (0, 0), sigmaX=max(0.5, up / 2)) > 0.5
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not contours:
        return []
    c = max(contours, key=cv2.contourArea)  # the object, not a speck of its colour
    area = cv2.contourArea(c)
    if not 0.05 * mask.size <= area <= 0.9 * mask.size:
        return []  # a speck, or the page itself (a shape cut by the page's edge leaves the page a notch)
    # How well each kind's smallest enclosing outline fits the silhouette (a circle fills pi/4 of its
    # rectangle and 0.60 of its triangle; each kind fills about all of its own): the best fit names it.
    (_, _), radius = cv2.minEnclosingCircle(c)
    (_, (rw, rh), _) = cv2.minAreaRect(c)
    tri_area, _ = cv2.minEnclosingTriangle(c)
    fits = {"circle": area / (math.pi * radius * radius + 1e-9), "rectangle": area / (rw * rh + 1e-9),
            "triangle": area / (float(tri_area) + 1e-9)}
    # A small circle's pixel steps fill up to 0.89 of its rectangle (easy-VQA crops): a rectangle must fill more.
    fits["rectangle"] = fits["rectangle"] if fits["rectangle"] >= 0.9 else 0.0
    kind = max(kinds, key=lambda k: fits[k])
    if fits[kind] < 0.75:
        return []
    x, y, bw, bh = cv2.boundingRect(c)
    hh, ww = mask.shape
    if (x <= 1) + (y <= 1) + (x + bw >= ww - 1) + (y + bh >= hh - 1) < 3:
        return []  # not cropped to it: the outline search above already had its whole edge to go by
    return [ShapeHit(Box(x / up, y / up, (x + bw) / up, (y + bh) / up).clip(w, h), kind, min(1.0, fits[kind]))]


def find_shapes(image: Image.Image, kinds: tuple[str, ...] = SHAPE_KINDS, *, perfectness: float = 0.85,
                max_results: int = 40, cropped: bool | None = None) -> list[ShapeHit]:
    """Outlines of the given kinds in ``image``, best fit first, boxes in ``image`` pixels.

    Small images (diagrams) are enlarged first so that edges and the Hough radius range have room.
    When none is found in a patch cropped to its object (``cropped``; by default, whether the image is
    marked so, :func:`hydra_vr.api.types.is_object_crop`), its silhouette is measured instead
    (:func:`_silhouette`): the object's outline runs along the patch edge.
    """
    unknown = set(kinds) - set(SHAPE_KINDS)
    if unknown:
        raise ValueError(f"unknown shape kinds {sorted(unknown)}; choose from {SHAPE_KINDS}")
    rgb = np.asarray(image.convert("RGB"))
    scale = 1.0
    if min(rgb.shape[:2]) < 256:
        scale = 256 / min(rgb.shape[:2])
        rgb = cv2.resize(rgb, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    # Yellow on white or green on pale blue barely differ in grey: edges and circles are also looked
    # for in each colour channel and in saturation, so colour contrast counts as well as brightness.
    channels = [gray, *cv2.split(rgb), cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)[:, :, 1]]
    edges = np.zeros_like(gray)
    for ch in channels:
        edges |= cv2.Canny(cv2.GaussianBlur(ch, (3, 3), 0), 50, 150)
    hits = []
    if "circle" in kinds:
        near_edges = cv2.dilate(edges, np.ones((3, 3), np.uint8))  # Hough centres are off by a pixel or so
        for ch in (gray, channels[-1]):
            hits += _circles(ch, near_edges, perfectness)
    hits += _polygons(gray, edges, kinds)
    hits.sort(key=lambda s: s.score, reverse=True)
    kept: list[ShapeHit] = []
    for hit in hits:  # one outline can be found by both routes and by nested edges: keep the best
        if all(hit.box.iou(k.box) < 0.5 for k in kept):
            kept.append(hit)
    # A rim inside its tyre, a hub inside its wheel: a shape inside a bigger one of its kind is a part of it.
    outer: list[ShapeHit] = []
    for hit in sorted(kept, key=lambda s: s.box.area, reverse=True):
        if not any(o.kind == hit.kind and hit.box.intersection(o.box) > 0.8 * hit.box.area for o in outer):
            outer.append(hit)
    kept = [k for k in kept if k in outer]
    circles = [k.score for k in kept if k.kind == "circle"]
    if circles:  # an arc of texture (a window's curve, an engine cover) fits far worse than the real circles beside it
        kept = [k for k in kept if k.kind != "circle" or k.score >= CIRCLE_SHARE * max(circles)]
    if not kept and (is_object_crop(image) if cropped is None else cropped):
        return _silhouette(image, kinds)
    w, h = image.size  # a circle cut by the frame keeps the part inside it
    return [ShapeHit(Box(s.box.x1 / scale, s.box.y1 / scale, s.box.x2 / scale, s.box.y2 / scale).clip(w, h), s.kind, s.score)
            for s in kept[:max_results]]
