"""What a person wears, by body part: geometry over a person's box (and face) and pixel colours, no model.

No offline detector has a class for a coat, a hat or sunglasses, but the ImageNet classifier has
about sixty garment classes ("fur coat", "sombrero", "sunglasses", "Windsor tie"). Asked about the
whole photo it names the scene; asked about the right part of one person (the head for a hat, the
face for glasses, the body below the face for a coat) it names what is worn there. This module says
which part a question asks about and where that part lies in a person's box; the describe backend
classifies the crop and keeps the garment classes of that part. A description that tells a person by
the colour they wear ("the woman in the green jacket") picks among people by that colour's share on that
part (``pick_worn``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from hydra_vr.answer_types import WEARING
from hydra_vr.api import colors as color_ops
from hydra_vr.api import hair as hair_ops
from hydra_vr.api.types import Box as _Box
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.lexicon.words import ARTICLES

Box = Sequence[float]

# ImageNet-1k class (timm's first synonym) -> (the part it is worn on, the plain word people use).
# Left out: "academic gown", "mortarboard" and "vestment", which the classifier gives dark suits and
# uniforms (0.34 on a dark suit, 0.24 on a military uniform of the sample photos; no gown in any sample).
GARMENTS: dict[str, tuple[str, str]] = {
    "sombrero": ("head", "hat"), "cowboy hat": ("head", "cowboy hat"), "bonnet": ("head", "bonnet"),
    "bearskin": ("head", "hat"), "crash helmet": ("head", "helmet"),
    "football helmet": ("head", "helmet"), "pickelhaube": ("head", "helmet"), "bathing cap": ("head", "cap"),
    "shower cap": ("head", "cap"), "wig": ("head", "wig"),
    "sunglass": ("face", "sunglasses"), "sunglasses": ("face", "sunglasses"), "mask": ("face", "mask"),
    "ski mask": ("face", "ski mask"), "gasmask": ("face", "gas mask"), "oxygen mask": ("face", "oxygen mask"),
    "Windsor tie": ("neck", "tie"), "bow tie": ("neck", "bow tie"), "bolo tie": ("neck", "bolo tie"),
    "stole": ("neck", "scarf"), "neck brace": ("neck", "neck brace"),
    "fur coat": ("body", "fur coat"), "trench coat": ("body", "trench coat"), "lab coat": ("body", "lab coat"),
    "suit": ("body", "suit"), "military uniform": ("body", "military uniform"), "jersey": ("body", "jersey"),
    "sweatshirt": ("body", "sweatshirt"), "cardigan": ("body", "cardigan"), "kimono": ("body", "kimono"),
    "abaya": ("body", "abaya"), "gown": ("body", "gown"),
    "cloak": ("body", "cloak"), "poncho": ("body", "poncho"), "apron": ("body", "apron"),
    "bulletproof vest": ("body", "vest"), "pajama": ("body", "pajamas"),
    "breastplate": ("body", "armor"), "cuirass": ("body", "armor"), "chain mail": ("body", "chain mail"),
    "bikini": ("body", "bikini"), "maillot": ("body", "swimsuit"), "brassiere": ("body", "bra"),
    "jean": ("legs", "jeans"), "miniskirt": ("legs", "skirt"), "overskirt": ("legs", "skirt"),
    "hoopskirt": ("legs", "skirt"), "swimming trunks": ("legs", "swimming trunks"), "knee pad": ("legs", "knee pads"),
    "sock": ("feet", "socks"), "running shoe": ("feet", "sneakers"), "sandal": ("feet", "sandals"),
    "clog": ("feet", "clogs"), "cowboy boot": ("feet", "boots"), "Loafer": ("feet", "shoes"),
}

_HIS = r"(his|her|their|its|the|a|one's)"
# The first part whose words the question uses wins: "wearing on his face" asks the face even when it
# says "the man in the green jacket".
_PART_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((part, re.compile(p, re.I)) for part, p in (
    ("head", rf"\bon {_HIS} heads?\b|\b(hats?|caps?|helmets?|headwear|headgear|wigs?|hoods?|bonnets?|hair)\b"),
    ("face", rf"\bon {_HIS} (faces?|eyes|nose)\b|\b(glasses|sunglasses|shades|spectacles|goggles|masks?)\b"),
    ("neck", rf"\b(around|on|at) {_HIS} necks?\b|\b(ties?|neckties?|bow ?ties?|scarf|scarves)\b"),
    ("feet", rf"\bon {_HIS} feet\b|\b(shoes?|boots?|sneakers|sandals?|footwear|socks?|slippers)\b"),
    ("legs", rf"\bon {_HIS} legs\b|\b(pants|trousers|jeans|skirts?|shorts)\b"),
    ("body", r"\b(coats?|jackets?|shirts?|t-shirts?|suits?|uniforms?|dress|dresses|outfits?|clothes|clothing|"
             r"sweaters?|vests?|gowns?|robes?|blouses?|hoodies?|garments?)\b"),
))


def worn_part(question: str) -> str | None:
    """The body part a question about clothing asks about ("What does the boy have on his head?" -> head;
    hair counts as the head's), "body" for what someone wears in general, None for a question about
    no garment."""
    return _part_named(question) or ("body" if WEARING.search(question) else None)


def _part_named(text: str) -> str | None:
    """The part of the first of :data:`_PART_WORDS` that ``text`` uses, else None."""
    return next((part for part, pattern in _PART_WORDS if pattern.search(text)), None)


def _names_person(text: str) -> bool:
    """Whether a word of ``text`` (a description's words before "in", "with" or "wearing") names a person in
    WordNet ("the skier", "the kid"), so that what follows may be what they wear ("the car with the blue hood" is
    no person's)."""
    return any(wn.is_a(sense, "person") for w in re.findall(r"[a-z]+", text) if w not in ARTICLES
               for sense in wn.noun_senses(wn.singular(w)))  # everyday senses: a dog is no person


def _names_other_thing(text: str) -> bool:
    """Whether ``text`` (a description's words before "in", "with" or "wearing") names a thing a photo shows
    (WordNet's organisms, artifacts, food...) and no person: "the car with the blue hood", "the dog in the red
    coat" tell their thing by a colour, not by what a person wears. "the one in red" names nothing."""
    things = [w for w in re.findall(r"[a-z]+", text) if w not in ARTICLES and any(  # any sense: a van's first is a vanguard
        wn.could_be_a(wn.singular(w), root) for root in wn.THING_ROOTS)]
    return bool(things) and not _names_person(text)


def garment(label: str, part: str) -> str | None:
    """The plain word for an ImageNet class worn on ``part`` ("sombrero", "head" -> "hat"), else None."""
    hit = GARMENTS.get(label)
    return hit[1] if hit is not None and hit[0] == part else None


def face_of(person: Box, faces: Sequence[Box]) -> Box | None:
    """The largest face whose centre lies in the upper half of ``person``'s box, if any."""
    x1, y1, x2, y2 = person[:4]
    inside = [f for f in faces if x1 <= (f[0] + f[2]) / 2 <= x2 and y1 <= (f[1] + f[3]) / 2 <= y1 + 0.5 * (y2 - y1)]
    return max(inside, key=lambda f: (f[2] - f[0]) * (f[3] - f[1]), default=None)


@dataclass(frozen=True)
class _Span:  # a part's box as shares of a reference box: (left, top, right, bottom)
    x1: float
    y1: float
    x2: float
    y2: float


# Around the face (its width and height as units): a hat sits above it, a tie below it.
_FROM_FACE = {"head": _Span(-0.3, -0.9, 1.3, 0.3), "face": _Span(-0.1, -0.05, 1.1, 1.05), "neck": _Span(-0.3, 0.9, 1.3, 2.0)}
# In the person's box, for a standing person seen whole or cut at the waist.
_FROM_PERSON = {"head": _Span(0.2, 0.0, 0.8, 0.18), "face": _Span(0.25, 0.04, 0.75, 0.17), "neck": _Span(0.2, 0.14, 0.8, 0.28),
                "body": _Span(0.0, 0.15, 1.0, 0.55), "legs": _Span(0.0, 0.5, 1.0, 0.9), "feet": _Span(0.0, 0.85, 1.0, 1.0)}


def part_box(person: Box, part: str, face: Box | None, size: tuple[int, int]) -> list[int] | None:
    """Where ``part`` lies for the person in ``person`` (whose face is ``face``, if found), clipped to
    the image ``size`` (width, height); None when it is under 8 pixels on a side."""
    px1, py1, px2, py2 = person[:4]
    if face is not None and part in _FROM_FACE:
        fx1, fy1, fx2, fy2 = face[:4]
        s, ref = _FROM_FACE[part], (fx1, fy1, fx2 - fx1, fy2 - fy1)
    elif face is not None and part == "body":  # from below the face down to the waist
        return _clip([px1, face[3], px2, face[3] + 0.55 * (py2 - face[3])], size)
    else:
        s, ref = _FROM_PERSON[part], (px1, py1, px2 - px1, py2 - py1)
    x, y, w, h = ref
    return _clip([x + s.x1 * w, y + s.y1 * h, x + s.x2 * w, y + s.y2 * h], size)


def _clip(box: list[float], size: tuple[int, int]) -> list[int] | None:
    x1, y1 = max(0, round(box[0])), max(0, round(box[1]))
    x2, y2 = min(size[0], round(box[2])), min(size[1], round(box[3]))
    return [x1, y1, x2, y2] if x2 - x1 >= 8 and y2 - y1 >= 8 else None


PARTS = tuple(part for part, _ in _PART_WORDS)


def worn_colors(text: str) -> tuple[str, tuple[str, ...]] | None:
    """(part, colours) when a description tells a person by the colour of what they wear: "the woman in
    the green jacket" -> ("body", ("green",)), "the girl in pink" -> ("body", ("pink",)); hair by hair's own names:
    "the woman with blonde hair" -> ("hair", ("blonde",)); None otherwise ("the red motorcycle", "the red hat")."""
    # the colour must follow "in", "with", "wearing" or "dressed": "the red hat" is a hat, not a person
    told = re.split(r"\b(?:in|with|wearing|dressed)\b", text.lower(), maxsplit=1)
    if len(told) < 2 or _names_other_thing(told[0]):
        return None
    words = re.findall(r"[a-z]+", told[1])
    at = next((i for i, w in enumerate(words) if hair_ops.names_hair(w)), None)
    named = () if at is None else tuple(dict.fromkeys(n for w in words[max(0, at - 2):at] if (n := hair_ops.hair_name(w))))
    if named:  # "the girl with blonde hair": hair is named on its own scale, read around the face
        return "hair", named
    colours = tuple(dict.fromkeys(c for w in words if (c := color_ops.canonical_color(w))))
    if not colours:
        return None
    part = _part_named(text) or (garment_part(words) if _names_person(told[0]) else None) or worn_part(text)
    if part is None:  # "in pink", "dressed in all black": the colour stands for the clothes
        dressed = re.search(r"\b(?:in|wearing|dressed in)\s+(?:all\s+)?([a-z]+)", text.lower())
        part = "body" if dressed and color_ops.canonical_color(dressed.group(1)) else None
    return (part, colours) if part is not None else None


# Where WordNet's kinds of clothing are worn, the first that a garment is a kind of (a beanie is headdress, a
# sandal footwear, jeans trousers); any other clothing is the body's ("a tank top", "a parka", "a top").
_WORN_KINDS = (("head", "headdress"), ("feet", "footwear"), ("neck", "neckwear"), ("legs", "trouser"), ("legs", "skirt"))


def garment_part(words: Sequence[str]) -> str | None:
    """The body part of the last of ``words`` (the words after "in", "with" or "wearing" of a description) that
    WordNet knows as clothing in any sense, by :data:`_WORN_KINDS`; None when none is. Any sense: a description
    puts the word where a garment goes ("the man in the red top"), and a top's garment sense is a rare one."""
    for word in reversed(words):
        if color_ops.canonical_color(word) or not wn.could_be_a(word, "clothing"):
            continue
        return next((part for part, kind in _WORN_KINDS if wn.could_be_a(word, kind)), "body")
    return None


def worn_share(person: Image.Image, part: str, colours: Sequence[str], face: Box | None = None) -> float:
    """The share of ``colours`` among the object pixels of ``part`` of the person cropped in ``person``, the part
    placed from ``face`` (in the crop's pixels) where one is given, else from the crop's box alone."""
    box = part_box([0, 0, person.width, person.height], part, face, person.size)
    if box is None:
        return 0.0
    shares = color_ops.dominant_colors(person.crop(tuple(box)), top_k=len(color_ops.BASE_COLORS), foreground=True)
    return sum(c.fraction for c in shares if c.name in colours)


def pick_worn(people: Sequence[Image.Image], part: str, colours: Sequence[str], *, faces: Sequence[Box | None] = (),
              least: float = 0.2, margin: float = 0.1) -> int | None:
    """The index of the person crop whose ``part`` shows most of ``colours``, when that share is at least
    ``least`` and ahead of the next by ``margin``; None when the pixels do not tell (the caller asks
    otherwise). Four people, a description by the colour of a coat: 0.75 against 0.06, 0.0, 0.0. ``faces[i]``,
    where given, is person ``i``'s face in its crop's pixels: a seated person or one cut at the waist has the
    coat below the face, not in the box's fixed share of a standing body."""
    if len(people) < 2:
        return None
    shares = [worn_share(p, part, colours, faces[i] if i < len(faces) else None) for i, p in enumerate(people)]
    order = sorted(range(len(shares)), key=lambda i: -shares[i])
    best, second = shares[order[0]], shares[order[1]]
    return order[0] if best >= least and best - second >= margin else None


def face_in_crop(person: Box, faces: Sequence[Box]) -> _Box | None:
    """The person's face (``face_of`` among ``faces``, photo pixels) in the pixels of that person's crop; None if none."""
    face = face_of(person, faces)
    return None if face is None else _Box(*face[:4]).shift(-person[0], -person[1])


def faces_in_crops(people: Sequence[Box], faces: Sequence[Box]) -> list[Box | None]:
    """Each person's face (:func:`face_in_crop`) where the parts are to be placed from it: None where no face is found,
    or where the face sits where a standing person's does in the box (the box's own shares of a standing body place
    the parts then)."""
    out: list[Box | None] = []
    for person in people:
        in_crop = face_in_crop(person, faces)
        standing = in_crop is not None and _as_standing(in_crop, person[2] - person[0], person[3] - person[1])
        out.append(None if in_crop is None or standing else in_crop.to_list(None))
    return out


def _as_standing(face: _Box, width: float, height: float) -> bool:
    """Whether ``face``'s centre (in a person crop of ``width`` x ``height``) lies in the share of the box where a
    standing person's face is (:data:`_FROM_PERSON`): a seated person, one cut at the waist or leaning into the
    frame has it elsewhere."""
    span, (cx, cy) = _FROM_PERSON["face"], face.center
    return span.x1 <= cx / width <= span.x2 and span.y1 <= cy / height <= span.y2


__all__ = ["GARMENTS", "PARTS", "face_in_crop", "face_of", "faces_in_crops", "garment", "garment_part", "part_box", "pick_worn", "worn_colors", "worn_part", "worn_share"]
