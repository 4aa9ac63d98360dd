"""Size words measured from boxes: whether a thing is big or small by how much of its photo it fills.

Asked of the describe LLM, "Is the plant big?" of a crop filling a fifth of the photo came back
"yes" or "no" as the colour shares beside it in the findings moved; a crop's pixels alone do not say how
big the thing is, its box in the photo does. Only clear cases are decided: a box filling a tenth of the
photo or more is big, one under a hundredth small; between, the backend answers as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

BIG_SHARE = 0.10  # a thing whose box fills a tenth of the photo is big to a person
SMALL_SHARE = 0.01  # one under a hundredth is small

_BIG = ("big", "large", "huge", "giant", "enormous")
_SMALL = ("small", "tiny", "little")
# "Is the kite big?", "Are the cups small?": the size word ends the question (verify_property's form);
# "Is the big kite yellow?" asks the colour
_ASKED = re.compile(r"^\s*(?:is|are)\s+(?:the|this|that|these|those|it|they)\b(?:\s+[a-z'-]+){0,4}?\s+(?:very\s+)?"
                    r"(" + "|".join(_BIG + _SMALL) + r")\s*\??\s*$", re.I)


def asked_size(question: str) -> str | None:
    """"big" or "small" when ``question`` asks only whether its thing is big or small, else None."""
    m = _ASKED.match(str(question))
    if m is None:
        return None
    return "big" if m.group(1).lower() in _BIG else "small"


def answer_size(question: str, box: Sequence[float] | None, photo_size: Sequence[int] | None) -> tuple[str, str] | None:
    """("yes" | "no", evidence) for a size question about a patch whose box in the photo is known, else None."""
    if box is None or photo_size is None:  # the whole photo: every simple_query of it passes here
        return None
    asked = asked_size(question)
    if asked is None:
        return None
    w, h = photo_size
    share = max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1]) / max(1.0, float(w * h))
    if SMALL_SHARE <= share < BIG_SHARE:
        return None
    big = share >= BIG_SHARE
    said = "yes" if big == (asked == "big") else "no"
    return said, (f"the patch's box fills {share:.1%} of the {w}x{h} photo (big from {BIG_SHARE:.0%}, small under "
                  f"{SMALL_SHARE:.0%})")
