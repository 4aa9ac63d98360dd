"""Word classes that several parsers share, declared once.

The question parser, the answer checks and the API each need to know which nouns name nothing in particular
("thing", "objects") and which name the photo itself ("picture", "snapshot"). They read them here. Where
WordNet holds the class (the senses of a photograph and a picture), the words come from it; the few hand-kept
classes are the ones WordNet has no node for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

# Nouns that name no thing in particular: a search for "objects" is not a search for a dog, although every dog is
# an object. WordNet's top nodes hold them, but also "whole" and "unit", which do name things in a photo.
GENERIC_NOUNS = frozenset({"thing", "object", "item", "stuff", "entity", "anything", "something", "everything"})

# Nouns that name a place on a surface rather than a thing: find("red region") searches colour, not a kind.
REGION_NOUNS = frozenset({"region", "area", "part", "spot", "patch"})
# Words that end a name's own noun phrase: what follows is another thing ("the cup on the table", "the man holding a
# phone") or a clause about it. The head noun of a name is the last word before the first of them.
PHRASE_CUT = frozenset({
    "on", "in", "at", "of", "with", "behind", "near", "from", "under", "above", "below", "next", "beside", "to", "just",
    "that", "which", "who", "hanging", "holding", "wearing", "looking", "between", "inside", "over",
})


def phrase_end(words: Sequence[str], start: int = 0) -> int:
    """The index of the first :data:`PHRASE_CUT` word of ``words`` from ``start`` on; ``len(words)`` if none."""
    return next((i for i in range(start, len(words)) if words[i] in PHRASE_CUT), len(words))


# Words before a noun phrase that name nothing ("a herd of the cows", "this kind of some fruit").
ARTICLES = frozenset({"a", "an", "the", "some"})
# Whose a thing is, before its noun ("holding his hat"): like an article, it names nothing itself.
POSSESSIVES = frozenset({"his", "her", "their", "its", "my", "your", "our"})
# The pronouns that stand for some person ("is anyone riding it?"); WordNet lists "someone" and "somebody" as a person,
# not "anyone" or "anybody".
PERSON_PRONOUNS = frozenset({"anyone", "anybody", "someone", "somebody"})
# The closed classes WordNet leaves out (it lists nouns, verbs, adjectives and adverbs only): determiners, pronouns,
# prepositions, conjunctions, question words and modals. A word WordNet does not know and that is none of these is
# a new open-class word ("hoodie"): :func:`hydra_vr.lexicon.wordnet.unknown`.
FUNCTION_WORDS = ARTICLES | POSSESSIVES | frozenset({
    "this", "that", "these", "those", "what", "which", "whose", "whom", "who", "whoever", "whichever", "whatever",
    "where", "when", "whenever", "wherever", "how", "why", "whether", "she", "hers", "him", "you", "yours", "ours",
    "theirs", "them", "they", "others", "and", "nor", "than", "because", "although", "though", "unless", "for", "from",
    "with", "without", "into", "onto", "upon", "toward", "towards", "against", "among", "amongst", "beside", "during",
    "could", "would", "should", "shall", "might", "must",
}) | PERSON_PRONOUNS

# The WordNet senses of the photo a question is asked about ("the left side of the picture", "is the shot blurry?").
_PHOTO_SENSES = ("photograph.n.01", "picture.n.01", "snapshot.n.01")


@cache
def photo_nouns() -> frozenset[str]:
    """The nouns that name the photo itself: every one-word lemma of WordNet's photograph, picture and snapshot
    senses (photo, photograph, picture, pic, image, snapshot, shot, ...)."""
    from hydra_vr.lexicon.wordnet import wordnet

    return frozenset(name for sense in _PHOTO_SENSES for name in wordnet().synset(sense).lemma_names() if "_" not in name)


def one_of(word: str, nouns: frozenset[str]) -> bool:
    """Whether ``word`` or a base form WordNet gives it ("objects" -> object, "regions" -> region) is in ``nouns``."""
    from hydra_vr.lexicon.wordnet import wordnet

    w = word.strip().lower()
    return w in nouns or any(base in nouns for base in wordnet()._morphy(w, "n"))


# Words of focus, by the pole they name. "sharp", "clear", "crisp" and "fuzzy" name a knife's edge, a glass, a cat's fur
# as well: alone (not set against the other pole) they are not read as focus; FOCUS_ONLY are.
_SHARP = ("in sharp focus", "in focus", "focused", "sharp", "crisp", "clear")
_BLURRY = ("out of focus", "unfocused", "blurry", "blurred", "blur", "fuzzy", "bokeh")
FOCUS_POLES = {**{w: "sharp" for w in _SHARP}, **{w: "blurry" for w in _BLURRY}}
FOCUS_ONLY = frozenset({"in sharp focus", "in focus", "focused", "out of focus", "unfocused", "blurry", "blurred", "blur",
                        "bokeh"})
# Any focus word in a text, the longest first, so that "out of focus" is read whole.
FOCUS_WORDS = re.compile(r"\b(" + "|".join(sorted(map(re.escape, FOCUS_POLES), key=len, reverse=True)) + r")\b")
# Words of a thing's orientation, by the pole they name: text on it is read one way up or the other.
_UPSIDE_DOWN = ("upside down", "upside-down", "inverted", "flipped")
_UPRIGHT = ("upright", "right side up", "right way up", "normal")
ORIENTATION_POLES = {**{w: "upside down" for w in _UPSIDE_DOWN}, **{w: "upright" for w in _UPRIGHT}}
# Phrases of several words that stand as one option of a choice ("in focus or out of focus", "upright or upside down").
SET_PHRASES = tuple(sorted({p for p in (*FOCUS_POLES, *ORIENTATION_POLES) if " " in p or "-" in p}, key=len,
                          reverse=True))
# the words that ask about it in a yes/no ("Is the label upside down?"): "upright" alone stands for a posture too
ORIENTATION_ONLY = re.compile(r"\b(upside[ -]down|inverted|right (?:side|way) up)\b")
# What lies behind the subject: a question about these asks about the photo's background.
BACKGROUND = re.compile(r"\b(background|backdrop|behind|distance|far away|crowd)\b")


__all__ = ["ARTICLES", "BACKGROUND", "FOCUS_ONLY", "FOCUS_POLES", "FOCUS_WORDS", "GENERIC_NOUNS", "ORIENTATION_ONLY",
           "ORIENTATION_POLES", "PHRASE_CUT", "REGION_NOUNS", "one_of", "phrase_end", "photo_nouns"]
