"""Which of several boxes a description picks by where it lies or how big it is.

"the dog sitting on the far left", "the bottom right tile", "the smallest tile", "the car at the
top": the words say which one; the boxes' geometry answers, no model. Relations to another thing
("just right of the door", "on top of the shelf") and directions ("the arrow pointing to the left")
are not placements of the thing itself and pick nothing here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hydra_vr.api.colors import canonical_color

_LEFT = {"left", "leftmost"}
_RIGHT = {"right", "rightmost"}
_TOP = {"top", "topmost", "upper", "uppermost", "highest"}
_BOTTOM = {"bottom", "bottommost", "lower", "lowest"}
_MIDDLE = {"middle", "center", "centre", "central"}
_PLACE_WORDS = _LEFT | _RIGHT | _TOP | _BOTTOM | _MIDDLE  # a place in the photo: nearness gives way to it
_BIG = {"big", "bigger", "biggest", "large", "larger", "largest", "huge"}
_SMALL = {"small", "smaller", "smallest", "little", "tiny"}
_TALL = {"tall", "taller", "tallest"}

# Another thing's place ("left of the door", "on top of the shelf"), not this thing's.
_RELATION = re.compile(
    r"\b(?:(?:left|right)\s+of|on\s+top\s+of|next\s+to|beside|behind|in\s+front\s+of|above|below|under|underneath|beneath|"
    r"near|between|closest\s+to|nearest\s+to|farthest\s+from)\b")
# How near the camera ("the boat nearest the camera", "the dog in the foreground"): things of one kind look bigger
# the nearer they stand, so the nearest is the largest box and the farthest the smallest. The camera is no other
# thing: "closest to the camera" is this thing's place, "closest to the door" a relation. "At the front" is left
# alone: "the front wheel".
_VIEWER = r"(?:the\s+)?(?:camera|viewer|photographer|lens|us|you)\b"
# Before its noun ("the nearest boat") the word says nearest to the camera too; before "to" or "the", another thing.
_BEFORE_NOUN = r"\b(?!\s+(?:to|from|away|the|a|an|of)\b)(?=\s+[a-z])"
_NEAR = re.compile(r"\b(?:(?:closest|nearest)(?:\s+to)?\s+" + _VIEWER + r"|in\s+the\s+foreground\b|"
                   r"(?:closest|nearest)" + _BEFORE_NOUN + ")")
_FAR = re.compile(r"\b(?:(?:farthest|furthest)(?:\s+(?:from|away\s+from))?\s+" + _VIEWER + r"|in\s+the\s+background\b|"
                  r"(?:farthest|furthest)" + _BEFORE_NOUN + ")")
# "the second horse from the left", "the third window from the top": which one counted from an edge (0: the edge's own)
_RANK = ("first", "second", "third", "fourth", "fifth", "sixth")
_COUNTED = re.compile(r"\b(" + "|".join(_RANK) + r")\b(?:\s+[a-z]+){0,3}?\s+from\s+(?:the\s+)?(left|right|top|bottom)\b")
# Clothing and things named with a place word.
_NAMES = re.compile(r"\b(?:tank|crop|tube|halter)\s+tops?\b|\btop\s+hats?\b")
# Which way it points or faces: a direction, not a place.
_DIRECTION = re.compile(
    r"\b(?:pointing|facing|looking|turned|turning|heading|leaning|moving|going|points|faces|looks)\s+"
    r"(?:to\s+|towards\s+|toward\s+)?(?:the\s+)?(?:left|right|up|down)\b")


@dataclass(frozen=True)
class Placement:
    """What a description says about where its thing lies among others of its kind.

    ``x``/``y``: the target in the candidates' spread (0 = leftmost/topmost, 1 = rightmost/bottommost,
    0.5 = middle), None when that axis is not named; ``size``: "big", "small" or "tall" when no place is;
    how near the camera ("nearest", "in the background") is measured as size: the largest is the nearest.
    """

    x: float | None = None
    y: float | None = None
    size: str | None = None
    words: tuple[str, ...] = ()
    rank: int = 0  # counted from the edge ``x`` or ``y`` names: 1 is the second from it

    def describe(self) -> str:
        return " ".join(self.words)


def _worn_tops(text: str) -> str:
    """``text`` without the "top" a colour names ("the man in the red top", "white tops"): a garment, not a place
    ("the top red car", "the red car at the top" keep theirs)."""
    return re.sub(r"\b([a-z]+)\s+tops?\b", lambda m: m.group(0) if canonical_color(m.group(1)) is None else m.group(1) + " ", text)


def placement(text: str) -> Placement | None:
    """The placement ``text`` names, or None ("the woman in the green jacket": none)."""
    low = _worn_tops(_NAMES.sub(" ", _DIRECTION.sub(" ", text.lower())))
    if (counted := _COUNTED.search(low)) is not None:  # "the second from the left": one axis, counted from its edge
        side = counted.group(2)
        axis = {"x": 0.0 if side == "left" else 1.0} if side in ("left", "right") else {"y": 0.0 if side == "top" else 1.0}
        return Placement(**axis, words=tuple(counted.group(0).split()), rank=_RANK.index(counted.group(1)))
    depth = [(m, kind) for pattern, kind in ((_NEAR, "big"), (_FAR, "small")) if (m := pattern.search(low))]
    if len(depth) == 1:  # "in the foreground", "at the back": where from the camera, before any other place
        match, kind = depth[0]
        low = low[:match.start()] + " " + low[match.end():]
        if not _RELATION.search(low) and not _PLACE_WORDS & set(re.findall(r"[a-z]+", low)):
            return Placement(size=kind, words=tuple(match.group(0).split()))
    if _RELATION.search(low):
        return None
    words = re.findall(r"[a-z]+", low)
    present = set(words)
    if (_LEFT & present and _RIGHT & present) or (_TOP & present and _BOTTOM & present):
        return None  # "from left to right", "top to bottom": no one place
    said = [w for w in words if w in _LEFT | _RIGHT | _TOP | _BOTTOM | _MIDDLE]
    x = 0.0 if _LEFT & present else 1.0 if _RIGHT & present else None
    y = 0.0 if _TOP & present else 1.0 if _BOTTOM & present else None
    if _MIDDLE & present:  # "the middle cake", "the middle left window": the axes not named otherwise
        x = 0.5 if x is None else x
        y = 0.5 if y is None else y
    if said:
        return Placement(x=x, y=y, words=tuple(said))
    for kind, vocab in (("tall", _TALL), ("big", _BIG), ("small", _SMALL)):
        hit = [w for w in words if w in vocab]
        if hit:
            return Placement(size=kind, words=tuple(hit))
    return None


def pick(boxes: Sequence[Sequence[float]], where: Placement) -> int:
    """Index of the box ``where`` picks among ``boxes`` (``[x1, y1, x2, y2]`` pixels; at least one)."""
    if not boxes:
        raise ValueError("pick() needs at least one box")
    if where.size is not None:
        if where.size == "tall":
            key = [b[3] - b[1] for b in boxes]
        else:
            key = [(b[2] - b[0]) * (b[3] - b[1]) for b in boxes]
        best = max(key) if where.size in {"tall", "big"} else min(key)
        return key.index(best)

    if where.rank and (where.x is None) != (where.y is None):  # counted from one edge along one axis
        a, b, end = (0, 2, where.x) if where.x is not None else (1, 3, where.y)
        order = sorted(range(len(boxes)), key=lambda i: (boxes[i][a] + boxes[i][b]) * (1 if end == 0.0 else -1))
        return order[min(where.rank, len(order) - 1)]

    def spread(centres: list[float]) -> list[float]:  # each centre's place in the candidates' spread, 0..1
        lo, hi = min(centres), max(centres)
        return [0.5 if hi - lo < 1e-6 else (c - lo) / (hi - lo) for c in centres]

    nx = spread([(b[0] + b[2]) / 2 for b in boxes])
    ny = spread([(b[1] + b[3]) / 2 for b in boxes])

    def distance(i: int) -> float:
        dx = nx[i] - where.x if where.x is not None else 0.0
        dy = ny[i] - where.y if where.y is not None else 0.0
        return math.hypot(dx, dy)

    return min(range(len(boxes)), key=distance)


def rows(boxes: Sequence[Sequence[float]], *, columns: bool = False) -> list[list[int]]:
    """Indices of ``boxes`` grouped into rows, top row first, each left to right (``columns``: left
    column first, each top to bottom). A box starts a new row when its centre lies more than half the
    boxes' median height below the row's (apples in a crate: 4 rows of 6)."""
    if not boxes:
        return []
    a, b = (0, 2) if columns else (1, 3)  # the axis across rows
    o1, o2 = (1, 3) if columns else (0, 2)  # the axis along a row
    centre = [(bx[a] + bx[b]) / 2 for bx in boxes]
    sizes = sorted(bx[b] - bx[a] for bx in boxes)
    gap = sizes[len(sizes) // 2] / 2
    groups: list[list[int]] = []
    for i in sorted(range(len(boxes)), key=lambda i: centre[i]):
        if groups and centre[i] - sum(centre[j] for j in groups[-1]) / len(groups[-1]) <= gap:
            groups[-1].append(i)
        else:
            groups.append([i])
    return [sorted(g, key=lambda i: boxes[i][o1] + boxes[i][o2]) for g in groups]


# How far from the frame's centre line a centre must lie to be on one side of it (a share of the frame):
# a box centred within 5% of the middle is on neither side, and the tools do not decide.
SIDE_MARGIN = 0.05
# "the middle" is the frame's central third on both axes; "the edge" a centre outside its central half.
_MIDDLE_REACH, _EDGE_REACH = 1 / 6, 1 / 4


def place_in(box: Sequence[float], frame: Sequence[float], places: Sequence[str]) -> str | None:
    """Which of ``places`` (left/right, top/bottom or middle/edge) the centre of ``box`` lies at in
    ``frame`` (both ``[x1, y1, x2, y2]`` pixels); None when it lies too near the dividing line."""
    fw, fh = max(frame[2] - frame[0], 1e-6), max(frame[3] - frame[1], 1e-6)
    u = ((box[0] + box[2]) / 2 - frame[0]) / fw - 0.5  # -0.5 (left edge) .. 0.5 (right edge)
    v = ((box[1] + box[3]) / 2 - frame[1]) / fh - 0.5
    kinds = set(places)
    if kinds <= {"left", "right"}:
        said = "left" if u < -SIDE_MARGIN else "right" if u > SIDE_MARGIN else None
    elif kinds <= {"top", "bottom"}:
        said = "top" if v < -SIDE_MARGIN else "bottom" if v > SIDE_MARGIN else None
    elif kinds <= {"middle", "edge"}:
        off = max(abs(u), abs(v))
        said = "middle" if off <= _MIDDLE_REACH else "edge" if off >= _EDGE_REACH else None
    else:
        return None  # "left or top": no one axis
    return said if said in kinds else None


def place_beside(box: Sequence[float], other: Sequence[float], places: Sequence[str], frame: Sequence[float]) -> str | None:
    """Which of ``places`` (left/right or top/bottom) ``box`` lies at beside ``other``, by their centres;
    None when the centres are closer than :data:`SIDE_MARGIN` of ``frame`` on that axis."""
    kinds = set(places)
    if kinds <= {"left", "right"}:
        d = ((box[0] + box[2]) - (other[0] + other[2])) / 2 / max(frame[2] - frame[0], 1e-6)
        said = "left" if d < -SIDE_MARGIN else "right" if d > SIDE_MARGIN else None
    elif kinds <= {"top", "bottom"}:
        d = ((box[1] + box[3]) - (other[1] + other[3])) / 2 / max(frame[3] - frame[1], 1e-6)
        said = "top" if d < -SIDE_MARGIN else "bottom" if d > SIDE_MARGIN else None
    else:
        return None  # "in the middle of" another thing is not a side of it
    return said if said in kinds else None


__all__ = ["Placement", "pick", "place_beside", "place_in", "placement", "rows"]
