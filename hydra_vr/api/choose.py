"""Which of several found things a description picks, from their boxes and pixels alone (no model).

A description tells its thing among others of its kind by place or size ("the person on the far
right", "the biggest coin": ``placement``) or, for a person, by the colour of what they wear ("the woman
in the green jacket": ``garments.worn_colors``). ``best_image_match``, the grounding step's re-pick,
AVIS's selection and ``benchmarks/real_photos/coverage.py`` all ask this one module, in that order
of cues: a place first, else the colour worn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PIL import Image

from hydra_vr.api.garments import pick_worn, worn_colors
from hydra_vr.api.placement import Placement, pick, placement


@dataclass(frozen=True)
class Cue:
    """What a description tells its thing apart by: a place (``where``) or a colour worn on a body part."""

    where: Placement | None = None
    worn: tuple[str, tuple[str, ...]] | None = None  # (part, colours)

    def describe(self) -> str:
        """How a note states the cue ("the expression says 'right'")."""
        if self.where is not None:
            return f"the expression says {self.where.describe()!r}"
        part, colours = self.worn or ("", ())
        return f"the expression tells its thing by {' and '.join(colours)} on the {part}, the most of it there"


def cue(text: str) -> Cue | None:
    """The cue ``text`` tells its thing apart by, a place before a colour worn; None when it tells none."""
    where = placement(text)
    if where is not None:
        return Cue(where=where)
    worn = worn_colors(text)
    return Cue(worn=worn) if worn is not None else None


def choose(told: Cue, boxes: Sequence[Sequence[float]], crops: Callable[[], Sequence[Image.Image]]) -> int | None:
    """The index among ``boxes`` that ``told`` picks; None when the pixels do not tell (close colour
    shares: the caller asks otherwise). ``crops`` gives the boxes' pixels, only read for a colour."""
    if told.where is not None:
        return pick(boxes, told.where)
    if told.worn is None:
        return None
    return 0 if len(boxes) == 1 else pick_worn(crops(), *told.worn)


__all__ = ["Cue", "choose", "cue"]
