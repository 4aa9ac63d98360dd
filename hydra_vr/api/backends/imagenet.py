"""Free-form object names -> ImageNet-1k classes, so ``find`` can look for what the detector has no class for.

The offline detector knows the 80 COCO classes; a rocket, a helmet, a pagoda or a space shuttle model
are none of them. The bundled ImageNet classifier knows a thousand classes, and its class activation
map (the classifier's weights over the last feature map) says where in the photo a class is seen.
This module only maps names: exact ImageNet synonyms ("space shuttle", "park bench", "sunglasses"),
the plain words of the garment table ("hat" -> sombrero, cowboy hat, ...), and a short table of common
words for a few classes together ("rocket" -> missile, projectile, space shuttle). A name that maps
nowhere returns no classes, never a guess.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from hydra_vr.api import colors as color_ops
from hydra_vr.api.garments import GARMENTS
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.lexicon.words import phrase_end

# Common words -> the ImageNet classes (timm's first synonym) that are such a thing. A word for a
# kind of building covers the building classes, as "vehicle" covers the COCO vehicles.
_BUILDINGS = ("palace", "monastery", "stupa", "bell cote", "church", "mosque", "castle", "dome", "boathouse")
WORDS: dict[str, tuple[str, ...]] = {
    "rocket": ("missile", "projectile", "space shuttle"),
    "shuttle": ("space shuttle",),
    "flag": ("flagpole",),
    "flower": ("daisy", "yellow lady's slipper"),
    "pagoda": _BUILDINGS, "temple": _BUILDINGS, "building": _BUILDINGS, "shrine": _BUILDINGS,
    "tower": ("bell cote", "stupa", "water tower", "obelisk", "palace", "monastery"),
    "coffee": ("espresso",),
    "sign": ("street sign",), "road sign": ("street sign",), "traffic sign": ("street sign",),
    "saucer": ("plate",), "dish": ("plate",),
    "hat": ("sombrero", "cowboy hat", "bearskin"),
    "glasses": ("sunglass", "sunglasses"),
}
# Clothes worn on the body, legs or feet are no thing to look for in the whole photo: the map of "military
# uniform" peaks on Grace Hopper's cap, a "fur coat" on whichever man wears fur. The describe backend reads
# clothes on each person's body part (api/garments.py); a program that finds nothing for them asks it.
_WORN_ON_PERSON = frozenset(cls.lower() for cls, (part, _) in GARMENTS.items() if part in ("body", "legs", "feet"))
# ImageNet synonyms that are everyday words for something else ("light" is a cigarette lighter).
_AMBIGUOUS = frozenset(
    {"light", "spot", "site", "rule", "nail", "hook", "knot", "wing", "chain", "switch", "bell", "tank", "chest", "top"}
)


@functools.cache
def imagenet_synonyms() -> tuple[tuple[str, ...], ...]:
    """Each ImageNet-1k class's synonyms, the first one its name ("Windsor tie"), from timm's label info."""
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    return tuple(tuple(s.strip() for s in info.index_to_description(i).split(",")) for i in range(1000))


@functools.cache
def imagenet_synsets() -> tuple[Any, ...]:
    """Each ImageNet-1k class's WordNet 3.0 synset (its id ``n02123045`` is the synset's offset)."""
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    return tuple(wn.synset_of_offset(int(info.index_to_label_name(i)[1:])) for i in range(1000))


@functools.cache
def definition(name: str) -> str | None:
    """What WordNet says ``name`` is (its gloss): of the ImageNet class whose first synonym it is (the classifier's
    label, so the class's own sense: "crane" the bird where the classifier saw the bird), else of the word's
    everyday noun sense; None for a word WordNet does not know as a noun."""
    key = name.strip().lower()
    synset = next((imagenet_synsets()[i] for i in class_indices((key,))), None) or wn.main_sense(key)
    return synset.definition().rstrip(" :;") if synset is not None else None


# A name whose kinds cover more classes than this is no thing to look for ("object", "artifact", "organism").
MAX_KINDS = 450


@functools.cache
def kinds_of(name: str) -> tuple[str, ...]:
    """The ImageNet classes (lower-cased first synonyms) that are kinds of ``name`` by WordNet: "butterfly" ->
    admiral, ringlet, monarch, ...; "insect" -> every insect class. () for a name WordNet does not know, for
    people (the detector and the face finder look for them; ImageNet's few people classes are no person
    search) and for names too general to search (:data:`MAX_KINDS`)."""
    main = wn.main_sense(name)  # a jacket is worn before it covers a book: the everyday sense only
    if main is None or wn.is_a(main, "person"):
        return ()
    senses = (main,)
    names = [syn[0].lower() for syn, synset in zip(imagenet_synonyms(), imagenet_synsets()) if _under(synset, senses)]
    return tuple(dict.fromkeys(names)) if 0 < len(names) <= MAX_KINDS else ()


def _under(synset: Any, senses: Sequence[Any]) -> bool:
    return any(sense in path for path in synset.hypernym_paths() for sense in senses)


def category_names(labels: Sequence[tuple[int, float]], category: str) -> list[tuple[str, float]]:
    """The classifier's ``(class index, probability)`` pairs that are kinds of ``category``, named at the
    level a person answers "what <category> is this?" with (``wordnet.basic_name``: ringlet and monarch are
    both "butterfly"), their probabilities summed per name, most probable first."""
    senses = wn.noun_senses(category)
    if not senses:
        return []
    synsets = imagenet_synsets()
    mass: dict[str, float] = {}
    for index, prob in labels:
        if _under(synsets[index], senses):
            name = wn.basic_name(synsets[index], category)
            mass[name] = mass.get(name, 0.0) + float(prob)
    return sorted(mass.items(), key=lambda kv: kv[1], reverse=True)


@functools.cache
def _name_table() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for synonyms in imagenet_synonyms():
        for s in synonyms:
            if s.lower() not in _AMBIGUOUS:
                table.setdefault(s.lower(), []).append(synonyms[0].lower())
    for cls, (_part, word) in GARMENTS.items():
        table.setdefault(word.lower(), []).append(cls.lower())
    for word, classes in WORDS.items():
        table[word] = [c.lower() for c in classes]
    kept = {k: tuple(dict.fromkeys(c for c in v if c not in _WORN_ON_PERSON)) for k, v in table.items()}
    return {k: v for k, v in kept.items() if v}


def imagenet_classes(name: str) -> tuple[str, ...]:
    """The ImageNet classes (lower-cased first synonyms) a name means; the longest phrase of it that maps wins.

    "a space shuttle toy" -> ("space shuttle",), "rockets" -> the rocket classes, "the narrow tower
    at the back" -> the tower classes; "the man" -> () (no ImageNet class is a person).
    """
    words = re.sub(r"[^a-z0-9' \-]", " ", name.lower()).split()
    words = [w for w in words[:phrase_end(words)] if not color_ops.is_color_name(w)]  # "orange" is a colour, not the fruit
    table = _name_table()
    for n in range(min(len(words), 4), 0, -1):
        for i in reversed(range(len(words) - n + 1)):  # the rightmost phrase: English puts the head noun last
            phrase = words[i : i + n]
            for candidate in (" ".join(phrase), " ".join(phrase[:-1] + [wn.singular(phrase[-1])])):
                if candidate in table:
                    return table[candidate]
    # No class is called so: the classes WordNet files under the name ("squirrel" -> fox squirrel), the
    # longest rightmost phrase first again.
    for n in range(min(len(words), 3), 0, -1):
        for i in reversed(range(len(words) - n + 1)):
            phrase = " ".join(words[i : i + n])
            if phrase.lower() in _AMBIGUOUS:
                continue
            if kinds := tuple(c for c in kinds_of(phrase) if c not in _WORN_ON_PERSON):
                return kinds
    return ()


@functools.cache
def class_index() -> dict[str, int]:
    """ImageNet class name (first synonym, lower case; the classifier's label) -> class index (of two classes
    with one name, "crane" the bird and the machine, the later)."""
    return {synonyms[0].lower(): i for i, synonyms in enumerate(imagenet_synonyms())}


def class_indices(classes: Sequence[str]) -> list[int]:
    """Indices of ImageNet classes named by their lower-cased first synonym (two classes share "crane")."""
    wanted = {c.lower() for c in classes}
    return [i for i, synonyms in enumerate(imagenet_synonyms()) if synonyms[0].lower() in wanted]
