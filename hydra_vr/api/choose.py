"""Which of several found things a description picks, from their boxes and pixels alone (no model).

A description tells its thing among others of its kind by place or size ("the person on the far
right", "the biggest coin": ``placement``), for a person by the colour of what they wear ("the woman
in the green jacket": ``garments.worn_colors``) or a smile (``expression``), or by another thing it is with or on ("the man holding a
bottle", "the cup on the tray": ``companion``, looked for in the photo). ``best_image_match``, the grounding
step's re-pick, AVIS's selection and ``benchmarks/real_photos/coverage.py`` all ask this one module, in that
order of cues: a place first, else the colour worn, else a smile, else the other thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PIL import Image

from hydra_vr.api.companion import Companion, companion, pick_by_companion
from hydra_vr.api.expression import pick_smiling
from hydra_vr.api.garments import face_in_crop, faces_in_crops, pick_worn, worn_colors
from hydra_vr.api.hair import pick_by_hair
from hydra_vr.api.placement import Placement, pick, placement
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.lexicon.words import phrase_end


@dataclass(frozen=True)
class Cue:
    """What a description tells its thing apart by: a place (``where``), a colour worn on a body part, or
    another thing it is with or on (``other``)."""

    where: Placement | None = None
    worn: tuple[str, tuple[str, ...]] | None = None  # (part, colours)
    other: Companion | None = None
    smiling: bool = False  # "the grinning waiter": the one whose face smiles

    def describe(self) -> str:
        """How a note states the cue ("the expression says 'right'")."""
        if self.where is not None:
            return f"the expression says {self.where.describe()!r}"
        if self.smiling:
            return "the expression tells its thing by a smile, read on each person's face"
        if self.other is not None:
            return self.other.describe()
        part, colours = self.worn or ("", ())
        if part == "hair":
            return f"the expression tells its thing by {' or '.join(colours)} hair, read around each face"
        return f"the expression tells its thing by {' and '.join(colours)} on the {part}, the most of it there"


def cue(text: str) -> Cue | None:
    """The cue ``text`` tells its thing apart by, a place before a colour worn before another thing; None when it
    tells none."""
    where = placement(text)
    if where is not None:
        return Cue(where=where)
    worn = worn_colors(text)
    if worn is not None:
        return Cue(worn=worn)
    if any(map(wn.smiles, re.findall(r"[a-z]+ing\b", text.lower()))):  # "the smiling man", "the man grinning"
        return Cue(smiling=True)
    other = companion(text)
    return Cue(other=other) if other is not None else None


def names_one_thing(expression: str) -> bool:
    """Whether ``expression`` is one noun phrase that tells its thing from no other: no :func:`cue` and nothing after
    it (``PHRASE_CUT``: "the spout of the teapot", "the dog beside the bench"). Such a thing may be a photo's subject."""
    words = re.findall(r"[a-z]+", expression.lower())
    return cue(expression) is None and phrase_end(words) == len(words)


def choose(told: Cue, boxes: Sequence[Sequence[float]], crops: Callable[[], Sequence[Image.Image]],
           look: Callable[[str], Sequence[Sequence[float]]] | None = None) -> int | None:
    """The index among ``boxes`` that ``told`` picks; None when the pixels do not tell (close colour
    shares, the other thing not found: the caller asks otherwise). ``crops`` gives the boxes' pixels, only read
    for a colour; ``look(name)`` the boxes a search of the photo finds for the other thing and, for a colour worn,
    for "face" (the body parts placed from each person's face); none given: nothing is looked for."""
    if told.where is not None:
        return pick(boxes, told.where)
    if told.other is not None:
        return pick_by_companion(boxes, look(told.other.name)) if look is not None and len(boxes) > 1 else None
    if told.smiling:
        if look is None or len(boxes) < 2:
            return None
        return pick_smiling(crops(), _own_faces(boxes, look("face")))
    if told.worn is None:
        return None
    if len(boxes) == 1:
        return 0
    found = look("face") if look is not None else []
    part, colours = told.worn
    if part == "hair":  # read around each person's own face, wherever it sits in the box
        return pick_by_hair(crops(), _own_faces(boxes, found), colours)
    return pick_worn(crops(), part, colours, faces=faces_in_crops(boxes, found))  # where each body part lies


def _own_faces(boxes: Sequence[Sequence[float]], faces: Sequence[Sequence[float]]) -> list[list[float] | None]:
    """Each person's face in the pixels of that person's crop (``garments.face_in_crop``); None where none is found."""
    return [None if (f := face_in_crop(b, faces)) is None else f.to_list(None) for b in boxes]


__all__ = ["Cue", "choose", "cue"]
