"""Which of several found things a description picks by another thing it is with or in.

"the man holding a bottle", "the dog with a frisbee", "the cup on the tray": of the men the detector
finds, the one holding a bottle is the one whose box holds the bottle's box; of the cups, the one on the
tray lies inside the tray's box. The other thing is looked for in the photo and the boxes answer, no
model. Nothing found for the other thing, or no candidate clearly ahead: the boxes do not tell.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hydra_vr.api.types import Box
from hydra_vr.lexicon.words import GENERIC_NOUNS, PHRASE_CUT, REGION_NOUNS

# The other thing is held, carried, worn or ridden by the candidate, or the candidate is in or on it: either way one
# box lies in the other (``_share``). "in the green coat" is a colour worn (garments), asked before this.
_WITH = ("with", "holding", "carrying", "wearing", "riding")
_IN = ("on top of", "inside", "in", "on")
_MARK = re.compile(r"\b(" + "|".join(w.replace(" ", r"\s+") for w in (*_WITH, *_IN)) + r")\s+")
_DETERMINERS = frozenset({"a", "an", "the", "some", "his", "her", "their", "its", "this", "that"})
# Words that make the phrase a place in the photo, not a thing ("on the left", "in the corner", "in the water"
# stays: water is a thing); "distance", "background" are the scene's depth.
_PLACES = frozenset({
    "left", "right", "top", "bottom", "middle", "center", "centre", "corner", "edge", "side", "front", "back",
    "background", "foreground", "distance", "photo", "picture", "image", "frame", "row", "line", "air",
}) | GENERIC_NOUNS | REGION_NOUNS
# How far ahead the best candidate's share must be of the next one's for the boxes to tell.
MARGIN = 0.25
# A found box this close to a candidate's (IoU) is the candidate itself ("the person with the person"), not another thing.
_SAME_BOX = 0.9
# What a thing holds may stick out of its box (a hand's reach): boxes are grown by this share of their size.
REACH = 0.1


@dataclass(frozen=True)
class Companion:
    """Another thing a description tells its thing by: ``name`` (to look for) and how the two lie: ``with``
    (the candidate holds, carries or wears it: their boxes overlap) or ``in`` (the candidate is in or on it)."""

    name: str
    relation: str  # "with" | "in"
    words: str  # as said ("holding a bottle")

    def describe(self) -> str:
        return f"the expression says {self.words!r}"


def companion(text: str) -> Companion | None:
    """The other thing ``text`` tells its thing by ("the girl holding an umbrella" -> umbrella, with; "the bowl on
    the tray" -> tray, in); None when it names none, or only a place ("the cup on the left")."""
    low = text.lower()
    for m in _MARK.finditer(low):
        words = re.findall(r"[a-z]+", low[m.end():])
        while words and words[0] in _DETERMINERS:
            words = words[1:]
        phrase = []
        for w in words:
            if w in PHRASE_CUT or w in ("and", "or"):
                break
            phrase.append(w)
        if not phrase or any(w in _PLACES for w in phrase):
            continue
        said = " ".join(m.group(1).split())
        relation = "with" if said in _WITH else "in"
        return Companion(" ".join(phrase), relation, f"{said} {' '.join(phrase)}")
    return None


def _share(candidate: Box, other: Box) -> float:
    """The share of the smaller of two boxes that lies in the other, the candidate's box grown by ``REACH`` of its
    size on each side: 1 for the cup on the tray or the coat on the man; the bottle held out at arm's length
    sticks out of the man's box. Which holds which does not matter to the pick."""
    dx, dy = REACH * candidate.width, REACH * candidate.height
    grown = Box(candidate.x1 - dx, candidate.y1 - dy, candidate.x2 + dx, candidate.y2 + dy)
    return min(1.0, grown.intersection(other) / max(min(candidate.area, other.area), 1e-6))


def pick_by_companion(boxes: Sequence[Sequence[float]], others: Sequence[Sequence[float]],
                      margin: float = MARGIN) -> int | None:
    """The index among ``boxes`` that lies most with one of ``others`` (the other thing's boxes), when it is at least
    ``margin`` ahead of every other candidate; None when nothing was found for the other thing or no one is ahead.
    A box of the other thing that is a candidate's own box ("the person with the person") does not count."""
    if not boxes or not others:
        return None
    cands, found = [Box(*b) for b in boxes], [Box(*o) for o in others]
    shares = [max((_share(b, o) for o in found if b.iou(o) <= _SAME_BOX), default=0.0) for b in cands]
    order = sorted(range(len(boxes)), key=lambda i: shares[i], reverse=True)
    best = order[0]
    runner_up = shares[order[1]] if len(order) > 1 else 0.0
    return best if shares[best] >= margin and shares[best] - runner_up >= margin else None


# The share of a thing's box that must lie in its holder's (grown by ``REACH``) for the holder to hold it.
HELD_SHARE = 0.5


def held_by(holder: Sequence[float], others: Sequence[Sequence[float]], least: float = HELD_SHARE) -> list[int]:
    """The indices of ``others`` (boxes of found things that may be held) that ``holder``'s box holds: at least ``least``
    of the thing's box lies in the holder's grown by ``REACH`` (a bottle held at arm's length sticks out), and the
    thing is smaller than the holder (the bench a man sits on is not in his hands). In the order given."""
    box = Box(*holder)
    out = []
    for i, other in enumerate(others):
        thing = Box(*other)
        if thing.area < box.area and box.iou(thing) <= _SAME_BOX and _share(box, thing) >= least:
            out.append(i)
    return out


__all__ = ["Companion", "HELD_SHARE", "MARGIN", "companion", "held_by", "pick_by_companion"]
