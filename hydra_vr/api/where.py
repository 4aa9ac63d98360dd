"""Place questions answered from boxes: "Is the lamp on the left or the right side of the picture?".

Where a thing lies in the photo, or beside another thing, is geometry once the tools have found it;
a model shown a crop cannot know where the crop was, and the offline ``describe`` backend answered
"right" to every left-or-right question of the labelled set whose thing it was not told the place of.
The toolbox asks this module before any VQA backend, so every backend and strategy gets the same
answer. It decides only when the tools find the thing and tell it apart from others of its kind
(a place or a colour worn, ``api.choose``); otherwise the backend answers as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from hydra_vr.asked import PlaceAsked
from hydra_vr.api.choose import choose, cue
from hydra_vr.api.names import expression_names
from hydra_vr.api.placement import place_beside, place_in

# find() of a name: (detections best first, how they were looked for), as VisionToolbox.look_for
LookFor = Callable[[Image.Image, str], tuple[list[Any], dict[str, Any]]]

# "the third, half-covered bottle": which one of several is meant, and find() lists by score
_ORDINALS = {"first", "second", "third", "fourth", "last", "other", "another", "next"}


@dataclass(frozen=True)
class Located:
    """What a name found: ``boxes`` of the candidates (one when the description tells its thing apart),
    ``name`` the name that found them."""

    name: str
    boxes: tuple[tuple[float, ...], ...]


def locate(look_for: LookFor, image: Image.Image, text: str) -> Located | None:
    """The boxes of what ``text`` describes: the first of its names that finds anything (not a bare colour
    region), then the one its cue picks among them; None when nothing is found, or when an ordinal names
    one of several that no cue tells apart."""
    words = set(text.lower().replace(",", " ").split())
    told = cue(text)
    for name in expression_names(text):
        if name.endswith(" region"):
            continue  # a colour region is not the thing ("red car": red paint anywhere)
        dets, _ = look_for(image, name)
        if not dets:
            continue
        boxes = [tuple(float(v) for v in d.box.to_list(1)) for d in dets]
        if len(boxes) > 1 and told is not None:
            picked = choose(told, boxes, lambda: [image.crop(tuple(int(v) for v in b)) for b in boxes],
                            lambda other: [d.box.to_list() for d in look_for(image, other)[0]])
            if picked is None and told.other is None:
                return None  # a place or a colour worn the pixels do not tell: which one is meant is unknown
            if picked is not None:  # the other thing, not found or near several: they are all candidates, as before
                boxes = [boxes[picked]]
        if len(boxes) > 1 and words & _ORDINALS:
            return None
        return Located(name, tuple(boxes))
    return None


def _box_text(box: Sequence[float]) -> str:
    return "[" + ", ".join(str(int(round(v))) for v in box) + "]"


def answer_place(look_for: LookFor, image: Image.Image, asked: PlaceAsked,
                 box: Sequence[float] | None = None, photo_size: Sequence[int] | None = None) -> tuple[str, str] | None:
    """(option, evidence) for the place question ``asked`` when the boxes answer it, else None.

    ``image`` is the patch asked about; ``box`` and ``photo_size`` where it lies in the whole photo when it
    is a part of it (None for the whole photo). A part asked where it is in the photo is answered by its
    own box (its thing is what it holds); the whole photo by where the tools find the thing (and the
    other thing of a "left of the ..." question).
    """
    if box is not None and photo_size is not None:
        if asked.reference:
            return None  # beside another thing: not in this crop's box alone
        w, h = photo_size
        said = place_in(box, (0, 0, w, h), asked.places)
        return _option(asked, said, f"this patch at {_box_text(box)} of the {w}x{h} photo")
    frame = (0.0, 0.0, float(image.width), float(image.height))
    thing = locate(look_for, image, asked.thing)
    if thing is None:
        return None
    if asked.reference:
        other = locate(look_for, image, asked.reference)
        if other is None or len(thing.boxes) != 1 or len(other.boxes) != 1:
            return None
        said = place_beside(thing.boxes[0], other.boxes[0], asked.places, frame)
        return _option(asked, said, f"{asked.thing} at {_box_text(thing.boxes[0])}, {asked.reference} at "
                                    f"{_box_text(other.boxes[0])}")
    if len(thing.boxes) > 1 and not asked.frame_named:
        return None  # "is the tall girl on the left or on the right?" of two girls: which of them, not the photo's side
    said_each = {place_in(b, frame, asked.places) for b in thing.boxes}
    said = said_each.pop() if len(said_each) == 1 else None
    where = "; ".join(_box_text(b) for b in thing.boxes[:4])
    return _option(asked, said, f"find({thing.name!r}): {where} in the {image.width}x{image.height} image")


def _option(asked: PlaceAsked, said: str | None, evidence: str) -> tuple[str, str] | None:
    if said is None:
        return None
    option = asked.options[asked.places.index(said)]
    return option, f"{evidence}: {said}"


__all__ = ["Located", "answer_place", "locate"]
