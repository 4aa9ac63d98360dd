"""Module-level helpers that generated programs may call beside ImagePatch.

Their docstrings are rendered into the reasoner's prompt together with ImagePatch's.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

from hydra_vr.answer_types import yesno_word
from hydra_vr.api import placement as placement_ops
from hydra_vr.api.choose import choose, cue
from hydra_vr.api.image_patch import ImagePatch
from hydra_vr.api.types import Box

_NUMBER_WORDS = {
    "zero": 0, "none": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a dozen": 12, "dozen": 12,
}


def best_image_match(list_patches: list[ImagePatch], content: list[str], return_index: bool = False) -> ImagePatch | int | None:
    """Return the patch from ``list_patches`` that best matches the descriptions in ``content``.

    Returns its index instead with ``return_index=True``; None for an empty list.
    Example:
        >>> # the man wearing a hat
        >>> men = image_patch.find("man")
        >>> man = best_image_match(men, ["man wearing a hat"])
    """
    if not list_patches:
        return None
    if len(list_patches) == 1:
        return 0 if return_index else list_patches[0]
    text = " ".join(content) if isinstance(content, (list, tuple)) else str(content)
    crops = functools.cache(lambda: [p.cropped_image for p in list_patches])
    # "on the far right", "the biggest", "the woman in the green jacket": the boxes (and that colour where a
    # jacket is) say which, not a look at each crop
    told = cue(text)
    # "the man holding a bottle": the other thing is looked for in the whole photo (a find of the program's own)
    look = lambda name: [p._box().to_list() for p in type(list_patches[0])(list_patches[0].original_image).find(name)]  # noqa: E731
    idx = choose(told, [p._box().to_list() for p in list_patches], crops, look) if told is not None else None
    if idx is None:  # where they lie in the photo and what found them, for the toolbox to weigh
        idx = list_patches[0]._tools().best_image_match(crops(), text, [p._box() for p in list_patches],
                                                        [p.label or "" for p in list_patches], list_patches[0].original_image)
    return idx if return_index else list_patches[idx]


def distance(patch_a: ImagePatch | float, patch_b: ImagePatch | float) -> float:
    """Return the distance between the edges of two patches (pixels), or between two numbers.

    Overlapping patches give a negative value: minus their intersection over union.
    Example:
        >>> # the cup closest to the laptop
        >>> laptop = image_patch.find("laptop")[0]
        >>> cup = min(image_patch.find("cup"), key=lambda c: distance(c, laptop))
    """
    if isinstance(patch_a, (int, float)) and isinstance(patch_b, (int, float)):
        return abs(patch_a - patch_b)
    if not (isinstance(patch_a, ImagePatch) and isinstance(patch_b, ImagePatch)):
        raise TypeError("distance() takes two ImagePatch objects or two numbers")
    a, b = patch_a._box(), patch_b._box()
    if a.intersection(b) > 0:
        return -a.iou(b)
    dx = max(0.0, max(a.x1, b.x1) - min(a.x2, b.x2))
    dy = max(0.0, max(a.y1, b.y1) - min(a.y2, b.y2))
    return math.hypot(dx, dy)


def bool_to_yesno(bool_answer: bool) -> str:
    """Return "yes" for True and "no" for False.

    Example:
        >>> answer = bool_to_yesno(image_patch.exists("dog"))
    """
    if isinstance(bool_answer, str):  # bool_to_yesno(simple_query(...)): the string "no" is truthy
        said = yesno_word(bool_answer)
        if said is not None:
            return said
    return "yes" if bool_answer else "no"


def coerce_to_numeric(string: str | float | int, no_string: bool = False) -> float | str | None:
    """Return the number in ``string`` ("3 dogs" -> 3, "two" -> 2, "1,000" -> 1000), else the string.

    With ``no_string=True`` return None instead of the string when there is no number.
    Example:
        >>> age = coerce_to_numeric(image_patch.simple_query("How old is the boy?"))
    """
    if isinstance(string, (int, float)):
        return string
    text = str(string).strip().lower()
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text)
    if m:
        num = float(m.group(0).replace(",", ""))
        return int(num) if num.is_integer() else num
    for word, value in sorted(_NUMBER_WORDS.items(), key=lambda kv: -len(kv[0])):
        if re.search(rf"\b{word}\b", text):
            return value
    return None if no_string else string


def sort_patches_left_to_right(list_patches: list[ImagePatch]) -> list[ImagePatch]:
    """Return the patches sorted by horizontal centre, leftmost first.

    Example:
        >>> # the second car from the left
        >>> car = sort_patches_left_to_right(image_patch.find("car"))[1]
    """
    return sorted(list_patches, key=lambda p: p.horizontal_center)


def sort_patches_top_to_bottom(list_patches: list[ImagePatch]) -> list[ImagePatch]:
    """Return the patches sorted by vertical centre, topmost first.

    Example:
        >>> # the lowest shelf
        >>> shelf = sort_patches_top_to_bottom(image_patch.find("shelf"))[-1]
    """
    return sorted(list_patches, key=lambda p: p.vertical_center)


def sort_patches_front_to_back(list_patches: list[ImagePatch]) -> list[ImagePatch]:
    """Return the patches sorted by depth, closest to the camera first.

    Example:
        >>> # the person farthest away
        >>> person = sort_patches_front_to_back(image_patch.find("person"))[-1]
    """
    return sorted(list_patches, key=lambda p: p.compute_depth())


def group_into_rows(list_patches: list[ImagePatch], columns: bool = False) -> list[list[ImagePatch]]:
    """Return the patches grouped into rows, top row first, each row left to right.

    With ``columns=True``, columns instead: left column first, each top to bottom.
    Examples:
        >>> # how many apples are in the top row?
        >>> rows = group_into_rows(image_patch.find("apple"))
        >>> answer = str(len(rows[0]))
        >>> # how many rows of apples are there?
        >>> answer = str(len(group_into_rows(image_patch.find("apple"))))
    """
    # A small model's own grouping (comparing neighbours' y in find()'s score order) counted 11 rows of 4.
    boxes = [(p.x1, p.y1, p.x2, p.y2) for p in list_patches]
    return [[list_patches[i] for i in group] for group in placement_ops.rows(boxes, columns=columns)]


def get_middle_patch(list_patches: list[ImagePatch]) -> ImagePatch | None:
    """Return the patch in the middle when sorted left to right (None for an empty list).

    Example:
        >>> # the middle cake
        >>> cake = get_middle_patch(image_patch.find("cake"))
    """
    if not list_patches:
        return None
    return sort_patches_left_to_right(list_patches)[len(list_patches) // 2]


def _center_distance(a: ImagePatch, b: ImagePatch) -> float:
    return math.dist((a.horizontal_center, a.vertical_center), (b.horizontal_center, b.vertical_center))


def get_patch_closest_to_anchor_object(list_patches: Sequence[ImagePatch], anchor_object: ImagePatch) -> ImagePatch | None:
    """Return the patch whose centre is closest to ``anchor_object``'s centre (None for an empty list).

    Example:
        >>> # the chair next to the table
        >>> table = image_patch.find("table")[0]
        >>> chair = get_patch_closest_to_anchor_object(image_patch.find("chair"), table)
    """
    return min(list_patches, key=lambda p: _center_distance(p, anchor_object), default=None)


def get_patch_farthest_from_anchor_object(list_patches: Sequence[ImagePatch], anchor_object: ImagePatch) -> ImagePatch | None:
    """Return the patch whose centre is farthest from ``anchor_object``'s centre (None for an empty list).

    Example:
        >>> # the car farthest from the bus
        >>> bus = image_patch.find("bus")[0]
        >>> car = get_patch_farthest_from_anchor_object(image_patch.find("car"), bus)
    """
    return max(list_patches, key=lambda p: _center_distance(p, anchor_object), default=None)


API_FUNCTIONS = (
    best_image_match,
    distance,
    bool_to_yesno,
    coerce_to_numeric,
    sort_patches_left_to_right,
    sort_patches_top_to_bottom,
    sort_patches_front_to_back,
    group_into_rows,
    get_middle_patch,
    get_patch_closest_to_anchor_object,
    get_patch_farthest_from_anchor_object,
)

__all__ = [f.__name__ for f in API_FUNCTIONS] + ["Box"]
