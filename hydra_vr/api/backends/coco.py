"""COCO-80 class names and the mapping of free-form object names onto them.

A closed-set detector can only honestly answer for names that mean one of its classes. The
mapping goes: exact class -> synonym table -> singular form -> (optional) embedding similarity
above a threshold. A name that maps nowhere returns no class and a reason, never a guess.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

import numpy as np

from hydra_vr.lexicon import wordnet as wn  # loads WordNet on first use only
from hydra_vr.lexicon.words import ARTICLES, phrase_end

COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
    "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase",
    "scissors", "teddy bear", "hair drier", "toothbrush",
)

# Names that honestly denote a COCO class (hyponyms and common words for it). Words for a PART or
# a wider category (e.g. "vehicle", "animal", "food") map to several classes.
SYNONYMS: dict[str, tuple[str, ...]] = {
    **{w: ("person",) for w in (
        "man", "men", "woman", "women", "people", "child", "children", "kid", "kids", "boy", "girl", "baby",
        "guy", "lady", "gentleman", "human", "player", "pedestrian", "skier", "surfer", "rider", "adult",
        "toddler", "teenager", "officer", "policeman", "soldier", "worker", "chef", "student", "athlete",
        "passenger", "driver", "persons", "someone", "individual", "spectator", "crowd", "batter", "catcher",
        "umpire", "snowboarder", "skateboarder", "tennis player", "businessman", "bride", "groom", "mother",
        "father", "grandmother", "friend", "customer", "vendor", "farmer", "cowboy", "doctor", "nurse",
    )},
    **{w: ("cat",) for w in ("kitten", "kitty", "tabby", "tabby cat", "kitten cat")},
    **{w: ("dog",) for w in ("puppy", "pup", "doggy", "canine", "hound")},
    **{w: ("car",) for w in ("automobile", "taxi", "cab", "sedan", "suv", "jeep", "van", "minivan", "vehicle car")},
    **{w: ("motorcycle",) for w in ("motorbike", "motor bike", "scooter", "moped", "dirt bike")},
    **{w: ("bicycle",) for w in ("bike", "cycle", "push bike")},
    **{w: ("airplane",) for w in ("plane", "aeroplane", "jet", "airliner", "aircraft")},
    **{w: ("bus",) for w in ("coach", "double decker", "school bus", "autobus")},
    **{w: ("truck",) for w in ("lorry", "pickup", "pickup truck", "fire truck", "semi")},
    **{w: ("boat",) for w in ("ship", "sailboat", "canoe", "kayak", "yacht", "ferry")},
    **{w: ("couch",) for w in ("sofa", "loveseat", "settee")},
    **{w: ("tv",) for w in ("television", "tv screen", "monitor", "screen", "tv monitor")},
    **{w: ("cell phone",) for w in ("phone", "cellphone", "mobile phone", "smartphone", "telephone", "iphone")},
    **{w: ("cup",) for w in ("mug", "coffee cup", "teacup", "coffee mug", "espresso cup")},
    **{w: ("dining table",) for w in ("table", "desk", "dinner table", "kitchen table", "coffee table")},
    **{w: ("potted plant",) for w in ("plant", "houseplant", "flower pot", "pot plant")},
    **{w: ("sports ball",) for w in ("ball", "football", "soccer ball", "basketball", "tennis ball", "baseball", "volleyball")},
    **{w: ("handbag",) for w in ("purse", "bag", "hand bag", "clutch")},
    **{w: ("backpack",) for w in ("rucksack", "knapsack", "school bag")},
    **{w: ("suitcase",) for w in ("luggage", "baggage", "trolley bag")},
    **{w: ("wine glass",) for w in ("glass", "goblet", "champagne glass")},
    **{w: ("donut",) for w in ("doughnut",)},
    **{w: ("hot dog",) for w in ("hotdog", "sausage")},
    **{w: ("refrigerator",) for w in ("fridge", "freezer")},
    **{w: ("remote",) for w in ("remote control", "controller", "tv remote")},
    **{w: ("laptop",) for w in ("notebook computer", "macbook")},
    **{w: ("mouse",) for w in ("computer mouse",)},
    **{w: ("teddy bear",) for w in ("teddy", "stuffed animal", "plush toy")},
    **{w: ("hair drier",) for w in ("hair dryer", "blow dryer", "hairdryer")},
    **{w: ("bird",) for w in ("pigeon", "seagull", "gull", "duck", "parrot", "sparrow", "crow", "goose", "swan", "eagle", "owl", "chicken")},
    **{w: ("horse",) for w in ("pony", "foal", "stallion", "mare")},
    **{w: ("cow",) for w in ("cattle", "calf", "bull", "ox")},
    **{w: ("sheep",) for w in ("lamb", "ram")},
    **{w: ("bear",) for w in ("polar bear", "grizzly", "brown bear")},
    **{w: ("bench",) for w in ("park bench",)},
    **{w: ("clock",) for w in ("wall clock", "clock tower")},
    **{w: ("book",) for w in ("books", "novel", "magazine")},
    **{w: ("skis",) for w in ("ski",)},
    **{w: ("tennis racket",) for w in ("racket", "racquet", "tennis racquet")},
    **{w: ("baseball glove",) for w in ("mitt", "baseball mitt")},
    **{w: ("traffic light",) for w in ("stoplight", "traffic signal", "stop light")},
    **{w: ("stop sign",) for w in ("stop-sign",)},
    **{w: ("knife",) for w in ("knives",)},
    **{w: ("vase",) for w in ("flower vase",)},
    "vehicle": ("car", "truck", "bus", "motorcycle", "bicycle", "train", "boat", "airplane"),
    "animal": ("bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe"),
    "pet": ("cat", "dog"),
    "fruit": ("banana", "apple", "orange"),
    "vegetable": ("broccoli", "carrot"),
    "food": ("banana", "apple", "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake"),
    "utensil": ("fork", "knife", "spoon"),
    "cutlery": ("fork", "knife", "spoon"),
    "furniture": ("chair", "couch", "bed", "dining table", "bench"),
    "seat": ("chair", "couch", "bench"),
    "object": COCO_CLASSES,
    "thing": COCO_CLASSES,
}


# The WordNet sense each class means where it is not the word's everyday one (a mouse is the rodent first,
# a toaster a person who proposes a toast); the other classes mean their name's main sense. A name whose
# main sense is a kind of a class's sense ("terrier", "sedan", "recliner", "woodpecker") means that class.
# Classes without a WordNet sense ("stop sign") are reached through SYNONYMS only.
CLASS_SENSES: dict[str, str] = {
    "kite": "kite.n.03", "hot dog": "hotdog.n.02", "cake": "cake.n.03", "toilet": "toilet.n.02",
    "tv": "television_receiver.n.01", "mouse": "mouse.n.04", "microwave": "microwave.n.02",
    "toaster": "toaster.n.02", "banana": "banana.n.02", "sports ball": "ball.n.01", "wine glass": "wineglass.n.01",
    "potted plant": "pot_plant.n.01", "cell phone": "cellular_telephone.n.01", "book": "book.n.02",
    "cow": "cattle.n.01",  # cow.n.01 is the female only: a bull or an ox is what the detector calls a cow
    "boat": "vessel.n.02",  # boat.n.01 is a small vessel: COCO's boats are ships and sailboats too
    "stop sign": "",
}


@functools.cache
def _class_senses() -> dict[Any, str]:
    """{synset: class} for every class with a sense."""
    table: dict[Any, str] = {}
    for cls in COCO_CLASSES:
        name = CLASS_SENSES.get(cls)
        if name == "":  # no WordNet sense
            continue
        sense = wn.wordnet().synset(name) if name else wn.main_sense(cls)
        if sense is not None:
            table[sense] = cls
    return table


def wordnet_class(name: str) -> str | None:
    """The class whose sense the clear WordNet sense of ``name`` (singular; :func:`wn.clear_noun_sense`) is a
    kind of, the nearest one up the tree; None for a word WordNet does not know, one it reads two ways, or a
    kind of no class."""
    senses = _class_senses()
    sense = wn.clear_noun_sense(wn.singular(name)) if name else None
    if sense is None:
        return None
    found = [(a.min_depth(), cls) for a in wn.ancestors(sense) if (cls := senses.get(a))]
    return max(found)[1] if found else None


@dataclass(frozen=True)
class NameMapping:
    name: str
    classes: tuple[str, ...]
    how: str  # "exact", "synonym", "singular", "head noun", "wordnet", "embedding", "unmapped"
    reason: str

    def __bool__(self) -> bool:
        return bool(self.classes)


def _singular(word: str) -> str:
    for suffix, repl in (("ies", "y"), ("ves", "f"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss"), ("xes", "x"), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + repl
    return word


def _normalize(name: str) -> str:
    name = re.sub(r"[^a-z0-9 \-]", " ", name.lower())
    name = re.sub(r"^(a|an|the|some|any|all)\s+", "", name.strip())
    return re.sub(r"\s+", " ", name).strip()


class CocoNameMapper:
    """Maps object names onto COCO-80 classes; ``embed`` enables the similarity fallback."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray] | None = None, threshold: float = 0.62) -> None:
        self._embed = embed
        self._threshold = threshold
        self._class_vecs: np.ndarray | None = None
        self._cache: dict[str, NameMapping] = {}

    def map(self, name: str) -> NameMapping:
        key = _normalize(name)
        if key not in self._cache:
            self._cache[key] = self._map(name, key)
        return self._cache[key]

    def _lookup(self, key: str) -> tuple[tuple[str, ...], str] | None:
        if key in COCO_CLASSES:
            return (key,), "exact"
        if key in SYNONYMS:
            return SYNONYMS[key], "synonym"
        return None

    def _head(self, name: str, words: list[str], whole: bool) -> NameMapping | None:
        """The mapping of a name's own phrase ``words``: the phrase or its singular (unless it is the whole
        name, tried already), its head noun (last two words, last word), then WordNet."""
        if not words:
            return None
        phrase = " ".join(words)
        tails = ([] if whole else [phrase, _singular(phrase)]) + ([" ".join(words[-2:]), words[-1]] if len(words) > 1 else [])
        for tail in tails:
            if hit := self._lookup(tail) or self._lookup(_singular(tail)):
                return NameMapping(name, hit[0], "head noun", f"{name!r} -> {', '.join(hit[0])} (head noun {tail!r})")
        for candidate in dict.fromkeys([phrase, *tails]):
            if cls := wordnet_class(candidate):
                return NameMapping(name, (cls,), "wordnet", f"{name!r} -> {cls} (WordNet: a {candidate} is a kind of it)")
        return None

    def _map(self, name: str, key: str) -> NameMapping:
        if not key:
            return NameMapping(name, (), "unmapped", "empty name")
        for candidate, how in ((key, None), (_singular(key), "singular"), (" ".join(_singular(w) for w in key.split()), "singular")):
            hit = self._lookup(candidate)
            if hit:
                classes, kind = hit
                return NameMapping(name, classes, how or kind, f"{name!r} -> {', '.join(classes)} ({how or kind})")
        # "cup on the table", "man holding a phone": the name's own phrase ends before the first such word, and its
        # head noun (last word) may still be a class ("red car"); after a partitive "of" ("a group of people", "a
        # piece of cake"), the thing that follows, when the phrase before names no class.
        words = key.split()
        cut = phrase_end(words, 1)
        phrases = [words[:cut]]
        if cut < len(words) and words[cut] == "of" and wn.partitive(words[cut - 1]):
            rest = [w for w in words[cut + 1:] if w not in ARTICLES]
            phrases.append(rest[:phrase_end(rest, 1)])
        for own in phrases:
            if hit := self._head(name, own, whole=own == words):
                return hit
        if self._embed is not None:
            if self._class_vecs is None:
                self._class_vecs = self._embed(list(COCO_CLASSES))
            vec = self._embed([key])[0]
            sims = self._class_vecs @ vec
            best = int(np.argmax(sims))
            if sims[best] >= self._threshold:
                cls = COCO_CLASSES[best]
                return NameMapping(name, (cls,), "embedding", f"{name!r} -> {cls} (embedding similarity {sims[best]:.2f})")
            return NameMapping(
                name, (), "unmapped",
                f"{name!r} is not a COCO-80 class (nearest {COCO_CLASSES[best]!r} at similarity {sims[best]:.2f} "
                f"< {self._threshold}); the detector cannot look for it",
            )
        return NameMapping(name, (), "unmapped", f"{name!r} is not a COCO-80 class or a known synonym; the detector cannot look for it")
