"""The names a referring expression gives find(), in the order to try them (no model).

"the girl in the yellow raincoat" -> girl, raincoat, then "yellow region": the grounding fallback, the place
questions of ``api.where`` and ``benchmarks/real_photos/coverage.py`` all try the same names.
"""

from __future__ import annotations

import itertools
import re

from hydra_vr.answer_types import COLOR_WORDS

# Words of a referring expression that name no object: the fallback tries the others as names.
_NOT_NAMES = frozenset({
    "the", "a", "an", "this", "that", "these", "those", "of", "in", "on", "at", "to", "from", "with", "by", "near", "next",
    "behind", "front", "under", "over", "above", "below", "between", "and", "or", "who", "which", "is", "are", "his", "her",
    "its", "their", "left", "right", "top", "bottom", "middle", "center", "centre", "far", "closest", "nearest", "first",
    "second", "third", "last", "big", "bigger", "biggest", "small", "smaller", "smallest", "large", "largest", "tall",
    "tallest", "short", "round", "side", "one", "other", "wearing", "holding", "sitting", "standing", "hanging",
}) | frozenset(COLOR_WORDS)
_OUTLINE_WORDS = frozenset({"round", "circular", "square", "triangular", "rectangular"})


def expression_names(query: str) -> list[str]:
    """Candidate object names in a referring expression, in order: two-word names first ("traffic
    sign"), then single words ("the girl in the yellow raincoat" -> girl, raincoat), then outlines and colours
    ("round sign", "yellow region")."""
    words = re.findall(r"[a-z]+", query.lower().replace("'s ", " "))
    keep = [w not in _NOT_NAMES and len(w) > 1 for w in words]
    pairs = [f"{a} {b}" for (a, b), k1, k2 in zip(zip(words, words[1:]), keep, keep[1:]) if k1 and k2]
    # "the round wall clock": last, the outline adjective with its noun, which find() can look for by shape
    outlined = []
    for i, w in enumerate(words):
        if w in _OUTLINE_WORDS:
            noun = list(itertools.takewhile(lambda j: keep[j], range(i + 1, len(words))))
            if noun:
                outlined.append(" ".join([w, *(words[j] for j in noun)]))
    # last of all, its colours: "the small orange kite" -> "orange region" (find() looks for regions of
    # that colour; "region" keeps "orange" from meaning the fruit)
    coloured = [f"{w} region" for w in words if w in COLOR_WORDS]
    return list(dict.fromkeys(pairs + [w for w, k in zip(words, keep) if k] + outlined + coloured)) or ["object"]


# "What is behind the house?": a question about the thing beside another, not about that other thing
_BESIDE = re.compile(r"\b(?:behind|beside|next to|in front of|near|nearby|close to|across from|"
                     r"(?:to|on) the (?:left|right) of)\s+(.+)")
_PHRASE_END = frozenset({"in", "on", "at", "with", "of", "and", "or", "is", "are", "was", "were", "that", "who", "which"})
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "his", "her", "their", "its"})
PRONOUNS = frozenset({"him", "her", "them", "it", "he", "she", "they", "himself", "herself", "themselves"})


def beside_what(question: str) -> str | None:
    """The thing a question places its thing beside, behind or in front of ("What kind of tree is
    behind the house?" -> "house", "What is next to her?" -> "her"); None when it places nothing so."""
    m = _BESIDE.search(question.lower().replace("'s ", " "))  # "the man's car": the car
    if m is None:
        return None
    words = re.findall(r"[a-z]+", m.group(1))
    if words and words[0] in PRONOUNS:
        return words[0]
    while words and words[0] in _DETERMINERS:
        words.pop(0)
    phrase = list(itertools.takewhile(lambda w: w not in _PHRASE_END, words))[:3]
    return " ".join(phrase) or None


__all__ = ["PRONOUNS", "beside_what", "expression_names"]
