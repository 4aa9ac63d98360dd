"""Size measured from boxes: whether a thing is big or small by how much of its photo it fills.

Asked of the describe LLM, "Is the plant big?" of a crop filling a fifth of the photo came back
"yes" or "no" as the colour shares beside it in the findings moved; a crop's pixels alone do not say how
big the thing is, its box in the photo does. Only clear cases are decided: a box filling a tenth of the
photo or more is big, one under a hundredth small; between, the backend answers as before.
"""

from __future__ import annotations

from collections.abc import Sequence

BIG_SHARE = 0.10  # a thing whose box fills a tenth of the photo is big to a person
SMALL_SHARE = 0.01  # one under a hundredth is small

_BIG = ("big", "large", "huge", "giant", "enormous")
_SMALL = ("small", "tiny", "little")


def photo_share(box: Sequence[float], photo_size: Sequence[int]) -> float:
    """How much of the photo (``photo_size`` = width, height) ``box`` covers, 0 to 1."""
    w, h = photo_size
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1]) / max(1.0, float(w * h))


def size_verdict(prop: str, box: Sequence[float] | None, photo_size: Sequence[int] | None) -> tuple[bool, str] | None:
    """(whether the thing in ``box`` has the size ``prop`` names, evidence) for a size word ("big", "very small")
    of a part of the photo whose box is known; None for any other property, the whole photo, or a share
    between the two thresholds."""
    words = str(prop).lower().split()
    if box is None or photo_size is None or not words or words[-1] not in _BIG + _SMALL:
        return None
    share = photo_share(box, photo_size)
    if SMALL_SHARE <= share < BIG_SHARE:
        return None
    big = share >= BIG_SHARE
    w, h = photo_size
    return big == (words[-1] in _BIG), (f"the patch's box fills {share:.1%} of the {w}x{h} photo (big from "
                                        f"{BIG_SHARE:.0%}, small under {SMALL_SHARE:.0%})")
