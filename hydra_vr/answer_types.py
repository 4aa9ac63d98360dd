"""What kind of answer a question expects, and whether an answer fits it.

One module for every role that produces an answer (simple_query backends, the summarizer, the final
answer, and any agent strategy): decide the expected type from the question (and the dataset's
choices when it has them), constrain the LLM with a JSON schema where the backend can, and check or
coerce what came back. It imports nothing from the rest of the package but ``gazetteer`` (which imports
nothing), so any layer may use it.

Kinds:
- ``yesno``: "Is the bus red?" -> yes | no
- ``choice``: "Is the man on the left or the right?" -> one of the options the question names, or the
  dataset's multiple-choice options
- ``number``: "How many people ...?" -> digits
- ``color``: "What color is the kettle?" -> colour words
- ``open``: what / which / who / where ... -> a name or short phrase, never a bare yes/no; "what
  country / which city ..." -> the name of one (``AnswerSpec.names``: a country's name is constrained to
  ISO 3166's list, a city's checked against GeoNames)
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hydra_vr import gazetteer
from hydra_vr.asked import PlaceAsked
from hydra_vr.lexicon import wordnet as wn  # loads WordNet on first use only
from hydra_vr.lexicon.words import GENERIC_NOUNS, PERSON_PRONOUNS, POSSESSIVES, SET_PHRASES, photo_nouns

AnswerKind = Literal["yesno", "choice", "number", "color", "open"]

_AUX = (
    "is", "are", "was", "were", "do", "does", "did", "can", "could", "will", "would", "has", "have", "had",
    "should", "may", "might", "must", "shall", "am", "isn't", "aren't", "doesn't", "don't", "didn't", "wasn't",
    "weren't", "can't", "won't", "hasn't", "haven't",
)
_ARTICLES = {"a", "an", "the", "this", "that", "these", "those", "some", "more", "less", "most"}
# Colour words a person answers with (mapped onto the pixel colour names where they differ).
COLOR_WORDS = (
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray", "grey",
    "silver", "gold", "golden", "beige", "tan", "navy", "maroon", "violet", "magenta", "cyan", "teal",
    "turquoise", "cream", "khaki", "olive", "blond", "blonde",
)
_NUMBER_WORDS = {
    "zero": 0, "none": 0, "no": 0, "one": 1, "a single": 1, "single": 1, "two": 2, "a pair": 2, "pair": 2, "couple": 2,
    "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "dozen": 12,
}
_YES = {"yes", "yeah", "yep", "true", "correct", "y"}
_NO = {"no", "nope", "false", "incorrect", "n"}

# Text that reports a failure instead of answering: a program's else-branch, an error, a repr.
_FAILURE_PATTERNS = [
    r"^$",
    r"^(none|null|nil|nan|n/?a|unknown|unclear|nothing|no answer|not sure|unsure|undetermined|undefined|error|false)$",
    r"\bnot (found|detected|visible|present|identified|recogni[sz]ed|available|determin\w*|sure|known|clear)\b",
    r"^no \w+( \w+)? (found|detected|visible|present|identified|in the (image|picture|photo))\b",
    r"^(no|none of the) (objects?|things?|items?|matches|match|results?|boxes|detections?)\b",
    r"\b(cannot|can't|can not|could not|couldn't|unable to|impossible to) (be )?(determine|tell|find|see|answer|identify|detect|say|read|know)\w*",
    r"\bi (don't|do not) know\b",
    r"^error\b|\b(traceback|exception|errno|nameerror|typeerror|attributeerror|valueerror|indexerror|keyerror|syntaxerror)\b",
    r"imagepatch\s*\(|<hydra_vr|object at 0x|^\{.*\}$|^\[.*\]$|'box':|\"box\":",
    r"^(the )?(answer|query|question) (is )?(not|cannot)\b",
    r"\bno (information|evidence|data)\b",
    # our own provenance labels ("recall (LLM knowledge, not from the image)") echoed back as the answer
    r"^\(?(the )?llm('s)? (own )?knowledge\b",
    r"^there (is|are) no\b",
]
# The words a small model says instead of an answer ("unknown" three times when asked for three guesses): a
# backend that can keeps a best-guess reply off them (``typed.guesses_schema``).
NO_ANSWER_WORDS = ("unknown", "none", "nothing", "not", "unsure", "n/a")

_FAILURE = re.compile("|".join(f"(?:{p})" for p in _FAILURE_PATTERNS), re.I)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def clean(text: Any) -> str:
    """First line, lower case, no surrounding quotes, trailing punctuation or 'answer:' prefix."""
    if text is None:
        return ""
    s = str(text).strip()
    if not s:
        return ""
    s = s.splitlines()[0].strip()
    s = re.sub(r"^(final answer|answer)\s*[:=-]\s*", "", s, flags=re.I)
    return s.strip().strip("\"'`").rstrip(".!,;").strip().lower()


# Words of a question that name nothing asked about: an answer made only of the question's other
# words just repeats its subject ("Who is this drummer?" -> "drummer").
_FUNCTION_WORDS = frozenset(_AUX) | _ARTICLES | {
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "of", "in", "on", "at", "to", "from", "with",
    "for", "by", "and", "or", "it", "its", "he", "she", "they", "his", "her", "their", "there", "here", "you", "your",
    "i", "we", "usually", "often", "typically", "kind", "type", "sort", "name", "called", "picture", "photo", "image",
}
# a question about what someone wears (the garments module's body parts read it too)
WEARING = re.compile(r"\b(wear|wears|wearing|worn|dressed|has on|have on|put on)\b", re.I)
# Two kinds of question about text: one ABOUT written text, whose answer may well repeat the question
# ("What does the stop sign say?": exempt from the repeat check), and, narrower, one that asks to READ the
# text out, which alone may take a long answer ("What language is the menu written in?" is about text, but
# its answer is one word).
_ABOUT_TEXT = re.compile(r"\b(say|says|said|written|write|read|reads|text|word|words|title|spell\w*|letters?|label)\b")
_READS = re.compile(r"\b(say|says|said|read|reads|spell|spells|quote)\b|^\s*what\s+(is|are)\s+(written|printed|typed)\b"
                    r"|^\s*what\s+((is|are)\s+(the\s+)?)?(text|words?|letters?|sentence|title|headline|caption|message)\b", re.I)


def repeats_question(answer: Any, question: str) -> bool:
    """True when every content word of ``answer`` is already in ``question`` (plurals aside).

    Such an answer names what the question is about, not what it asks ("Who is this drummer?" ->
    "drummer", "What is the man holding?" -> "the man"). Questions about written text are exempt.
    """
    if not question or _ABOUT_TEXT.search(question.lower()):
        return False
    said = [_stem(w) for w in _words(clean(answer)) if w not in _FUNCTION_WORDS]
    asked = set(_stems(question))
    return bool(said) and all(w in asked for w in said)


def composed_of(answer: Any, question: str, replies: Sequence[Any]) -> str | None:
    """The tool replies an answer was glued from, when the rest of it only repeats the question; else None.

    Programs build sentences around what simple_query said: "Two girls wearing" + "dress" + "dress" became
    "two girls wearingdressdress" for "What are the two girls wearing?". The replies are the answer ("dress"; two
    different ones joined by "and", in the answer's order; different kinds of one thing by that thing: "paper cup" and
    "coffee cup" are cups). An answer that is one reply, holds none, or
    adds words of its own (a number, a name the question lacks) is left alone (None).
    """
    text = clean(answer)
    said = [r for r in dict.fromkeys(clean(r) for r in replies) if r]
    if not text or not question or text in said:
        return None
    rest, used = text, []
    for reply in sorted(said, key=len, reverse=True):  # "academic gown" before "gown"
        if reply in rest:
            rest = rest.replace(reply, " ")
            used.append(reply)
    if not used:
        return None
    asked = set(_stems(question))
    if any(_stem(w) not in asked for w in _words(rest) if w not in _FUNCTION_WORDS):
        return None
    heads = {reply.split()[-1] for reply in used}
    if len(used) > 1 and len(heads) == 1 and wn.is_noun(head := heads.pop()):
        return head  # "paper cup" and "coffee cup": kinds of one thing (a compound names a kind of its head), named by it
    return " and ".join(sorted(used, key=text.find))


# "Is anyone sitting on the bench?", "Is someone holding an umbrella?": yes presupposes a person.
_ANYONE = re.compile(r"^\s*(?:is|are|was|were|does|do|did|can|could)\s+(?:there\s+)?"
                     r"(?:" + "|".join(sorted(PERSON_PRONOUNS)) + r"|any\s+(?:one|person|people|man|woman|men|women))\b", re.I)


def asks_anyone(question: str) -> bool:
    """True for a yes/no question whether anyone does or is something ("Is anyone sitting on the bench?"):
    with no person in the photo its answer is no."""
    return bool(_ANYONE.match(question))


_COUNT_PHRASE_END = frozenset(_AUX) | {"of", "in", "on", "at", "from", "with", "around", "near", "there", "can", "you",
                                       "that", "which", "who", "does", "do", "inside", "under", "behind", "per"}


@dataclass(frozen=True)
class Counted:
    """What a "how many ..." question counts: ``what``, the stems of the counted phrase without its colours;
    ``rest``, the stems of the question's other words (what a program may have counted instead: the table
    of "how many legs does the table have", the apples of "how many rows of apples"); ``phrase``, the
    counted phrase as written ("red cars")."""

    what: tuple[str, ...]
    rest: tuple[str, ...]
    phrase: tuple[str, ...]


def _verb_after_noun(noun: str, word: str) -> bool:
    """Whether ``word`` after ``noun`` in a counted phrase is the verb ("towers stand", "sheep graze"): after a plural,
    a word that can be a verb and is no plural itself (a compound noun's modifier is singular: "wine glasses"); after
    a noun whose plural is the same, a base-form verb the tagged corpus saw more often as a verb, where the two words
    are no compound noun ("bus stop" is one)."""
    if word.endswith("s") or not wn.is_verb(word):
        return False
    if wn.singular(noun) != noun:
        return True
    return (wn.wordnet().morphy(word, "v") == word and wn.seen_as(word, "v") > wn.seen_as(word, "n")
            and not wn.is_noun(f"{noun} {word}"))


def counted_thing(question: str) -> Counted | None:
    """The :class:`Counted` of a "how many ..." question: "How many legs does the table have?" ->
    what ("leg",), rest ("table", "have"); None for any other question."""
    words = _words(question)
    if len(words) < 3 or words[:2] != ["how", "many"]:
        return None
    phrase = tuple(itertools.takewhile(lambda w: w not in _COUNT_PHRASE_END, words[2:]))
    # "how many towers stand around ...": after a plural noun, a word that can be a verb is the verb (a compound
    # noun's modifier is singular: "bus stops", "wine glasses")
    cut = next((i for i in range(1, len(phrase)) if _verb_after_noun(phrase[i - 1], phrase[i])), len(phrase))
    phrase = phrase[:cut]
    if not phrase:
        return None
    rest = tuple(_stem(w) for w in words[2 + len(phrase):] if w not in _FUNCTION_WORDS and w not in _COUNT_PHRASE_END)
    return Counted(tuple(_stem(w) for w in phrase if w not in COLOR_WORDS), rest, phrase)


# "Is there a X ...?", "Does the image contain X?", "Is a X present?", "Do you see X?": the X asked about.
_PRESENCE = [
    re.compile(r"^(?:is|are) there (?P<neg>not |no )?(?:any |a |an |some )?(?P<x>.+)$"),
    re.compile(r"^(?:does|do) (?:the|this) (?:image|picture|photo|scene|photograph) (?P<neg>not )?"
               r"(?:contain|have|show|include|depict)s? (?:any |a |an |some )?(?P<x>.+)$"),
    re.compile(r"^(?:is|are) (?P<neg>no )?(?:any |a |an |some )?(?P<x>.+?) (?:present|visible|shown|there)(?: in .*)?$"),
    re.compile(r"^(?:can|do) you (?P<neg>not )?see (?:any |a |an |some )?(?P<x>.+)$"),
]
# "Is anyone riding the bike?", "is there somebody in the boat?": whether a person is there, doing or placed as the rest says
_PERSON_PRESENCE = re.compile(r"^(?:is|was) (?:there )?(?:" + "|".join(sorted(PERSON_PRONOUNS)) + r")\b ?(?P<where>.*)$")
_PRESENCE_END = re.compile(r"\s+(?:in|on|at|inside|outside|near|under|behind|beside|next|above|below|within|among|"
                           r"over|around|along|across|between|against|through|to|present|visible|shown|anywhere|here|"
                           r"there)\b.*$")


@dataclass(frozen=True)
class Presence:
    """What a presence question asks about: ``thing`` to look for, ``negated`` ("is there not / no ..."),
    and ``where`` the question places it ("on the water"; "" for anywhere in the image)."""

    thing: str
    negated: bool
    where: str = ""


_ANYWHERE = re.compile(r"^(?:(?:in|on|within) (?:the|this) (?:image|picture|photo|photograph|scene|frame)|present|"
                       r"visible|shown|anywhere|here|there)\b\s*")


def _placed(where: str) -> str:
    """Where a presence question places its thing, without the words that place it nowhere in particular ("in the
    photo", "here")."""
    where = where.strip()
    while where and _ANYWHERE.match(where):
        where = _ANYWHERE.sub("", where, count=1).strip()
    return where


def asked_presence(question: str) -> Presence | None:
    """The :class:`Presence` a presence question asks about, or None for any other question:
    "Is there a yellow shape in the image?" -> yellow shape, "Is no teal shape present?" -> teal shape,
    negated; "Are there cups on the shelf?" -> cups, where "on the shelf". What to look for is the
    phrase before where the question places it."""
    q = " ".join(_words(question.replace("?", " ")))
    if m := _PERSON_PRESENCE.match(q):
        return Presence("person", False, _placed(m.group("where")))
    for pattern in _PRESENCE:
        m = pattern.match(q)
        if not m:
            continue
        phrase = m.group("x")
        cut = _PRESENCE_END.search(phrase)
        thing, where = (phrase[: cut.start()], _placed(phrase[cut.start():])) if cut else (phrase, "")
        if re.match(r"(more|fewer|less|at least|at most|exactly|only|\d+)\b", thing):
            return None  # "are there more than two people": a count, not a presence
        words = thing.split()
        while words and (words[0] in ("a", "an", "the") or wn.adverb_only(words[0])):
            words.pop(0)  # "(is) the whole flower (visible)", "(is there) also a second bird": the thing's own words
        thing = " ".join(words)
        name = _before_doing(words)  # "a lamp hanging (over the table)": a lamp, placed over the table
        if len(name) < len(words):
            thing, where = " ".join(name), where or _placed(" ".join(words[len(name) + 1:]))
        thing = re.sub(r"^(?:anything|something|things?|objects?) ", "", thing.strip())  # "anything red" -> red
        if thing and thing not in _FUNCTION_WORDS:
            return Presence(thing, bool(m.group("neg")), where)
    return None


def miscount(answer: str, counted: Counted | None, finds: Sequence[tuple[str, int]]) -> str | None:
    """Why a count answers for the wrong thing, or None.

    ``counted``: what the question counts (:func:`counted_thing`); ``finds``: (name, how many came back) of
    each find() the program made. "How many legs does the table have?" -> 1 from find("table"), "How many
    rows of apples?" -> 24 from find("apple"): the number is how many of another thing the question names.
    A program that also looked for the counted thing itself is given the benefit of the doubt.
    """
    if counted is None or not re.fullmatch(r"\d+", answer or ""):
        return None
    heads = [(name, _stem(_words(name)[-1]) if _words(name) else "", n) for name, n in finds]
    if any(head in counted.what for _, head, _ in heads):
        return None
    for name, head, n in reversed(heads):
        if n == int(answer) and head in counted.rest:
            return (f"{answer!r} is how many find({name!r}) returned, but the question counts {' '.join(counted.phrase)}, "
                    f"not {name}: count those instead (find them, inside the {name} if they are its parts, or ask simple_query)")
    return None


_GENERIC_THINGS = GENERIC_NOUNS | {"shape"}  # a search for a "shape" says nothing of its colour either


def against_search(answer: str, asked: Presence | None, finds: Sequence[tuple[str, int]]) -> str | None:
    """Why a yes/no to a negated presence question contradicts the program's own search, or None.

    ``asked``: what the presence question looks for (:func:`asked_presence`); ``finds``: (name, how many came
    back) of each find() the program made that could look for its name. "Is there not a red shape?" is yes
    when find("red") came back empty; a small model's programs answered "No red shape" (read as no) there,
    and yes to "is there not a blue shape?" after find("blue") found one: they answer the question without
    its "not". The last find of the asked thing (or a word of it: "red" for "red shape") decides. A question
    that places the thing ("... on the table") is not one whole-image find, so it is left alone.
    """
    if asked is None or not asked.negated or asked.where or answer not in ("yes", "no"):
        return None
    thing = set(_stems(asked.thing))
    told = thing - _GENERIC_THINGS  # find("shape") finding one says nothing of "a red shape"; find("red") does
    looked = [(name, n) for name, n in finds if told and told <= set(_stems(name)) <= thing]
    if not looked:
        return None
    name, n = looked[-1]
    right = "no" if n else "yes"
    if answer == right:
        return None
    there = f"found {n}: there is one" if n else "found none: there is none"
    return (f"{answer!r} answers the question without its 'not': find({name!r}) {there}, so "
            f"whether there is no {asked.thing} is {right}")


def yesno_word(text: Any) -> str | None:
    """"yes" / "no" for a reply that starts with one ("No, there is none." -> no), else None."""
    words = _words(clean(text))
    if words and words[0] in _YES:
        return "yes"
    if words and words[0] in _NO:
        return "no"
    return None


def _asks_who_or_where(question: str) -> bool:
    return bool(re.match(r"\s*(who|whom|whose|where)\b", question, re.I))


# What a number may answer: "What number is on the bus?", "What year ...?", "What time ...?", a reading.
_ASKS_NUMBER = re.compile(r"\b(numbers?|numerals?|digits?|years?|time|date|age|old|price|prices|cost|costs|score|"
                          r"temperature|speed|size|height|weight|route|platform|code|percent(age)?|amount|total|sum|"
                          r"distance|capacity|channel|page|jersey|plate|model|version|generation|decade|century|floor|level|gate|"
                          r"room|seat|row|lane|exit|track|limit|rating|volume|quantity|ratio|phone)\b", re.I)


# A measure word after a preposition names a place, not the quantity asked ("the towers in the distance", "what is on the
# plate", "who is in the room"); the words of a written number ("the number on the bus") ask for one wherever they are.
_PLACED = re.compile(r"\b(?:in|on|at|into|onto|from|near|by|behind|under|over|above|below|beside|across|inside|off)\s+"
                     r"(?:(?:the|a|an|this|that|these|those|his|her|its|their|my|your|our)\s+)?$", re.I)
_NUMERALS = re.compile(r"numbers?|numerals?|digits?", re.I)


def _asks_number(question: str) -> bool:
    """Whether ``question`` names a quantity or a written number (:data:`_ASKS_NUMBER`) other than as a place."""
    return any(_NUMERALS.fullmatch(m.group(0)) or not _PLACED.search(question[: m.start()])
               for m in _ASKS_NUMBER.finditer(question))


def _asks_no_number(question: str) -> bool:
    """True for an open question a bare number cannot answer: who / where, or what / which without a
    quantity or a reading in it. "What is the red shape?" was answered "1", how many find("red")
    returned."""
    if _asks_who_or_where(question):
        return True
    return (bool(re.match(r"\s*(what|which)\b", question, re.I)) and not _asks_number(question)
            and not asks_to_read(question))


MAX_SHORT_WORDS = 6


def asks_to_read(question: str) -> bool:
    """True when the question asks for text read off the image, not for a short name."""
    return bool(_READS.search(question))


def _too_long(words: list[str], question: str) -> bool:
    # a 16-word OCR dump returned for "What language is the menu written in?" names no language
    return bool(question) and len(words) > MAX_SHORT_WORDS and not asks_to_read(question)


def is_failure_answer(text: Any) -> bool:
    """True for text that reports a failure instead of answering ("no bus found", "unknown", an error...)."""
    s = clean(text)
    return bool(_FAILURE.search(s))


@dataclass(frozen=True)
class AnswerSpec:
    """The answer a question expects. ``options`` holds the allowed answers for yesno and choice; for a
    colour, the colour words a caller measured (describe's ``_colors_seen``), which its schema is kept to, if any."""

    kind: AnswerKind
    options: tuple[str, ...] = field(default=())
    # Dataset multiple choice (A-OKVQA): the answer must name an option, but keeps its own words,
    # since the same answer is also scored as a direct answer.
    keep_words: bool = False
    # The question itself (every kind but dataset choices): an open answer that only repeats it is refused.
    question: str = field(default="", compare=False)
    # An open question that asks for a country or a city: the answer must name one.
    names: gazetteer.PlaceKind | None = None
    # A count's smallest answer: 1 where no tool could look for the thing ("how many" presumes it is there, and
    # a 0 would rest on nothing).
    least: int = 0

    # ---------------------------------------------------------------- prompts
    def describe(self) -> str:
        """One sentence for a prompt: what the answer must look like. A country or city question keeps the
        open question's sentence: "answer with the name of a country" turned a small model from a right
        country to a wrong neighbour (its schema enum or check keeps it to a name)."""
        if self.kind == "yesno":
            return 'a yes/no question: answer "yes" or "no".'
        if self.kind == "choice":
            return "a choice: answer with exactly one of " + ", ".join(f'"{o}"' for o in self.options) + "."
        if self.kind == "number":
            return "a count or number: answer with digits only (for example 3)."
        if self.kind == "color":
            return "a colour question: answer with colour words (for example red, or white and blue)."
        return 'an open question: answer with a name or short phrase (one to three words), never "yes" or "no".'

    def json_schema(self, key: str = "answer") -> dict[str, Any] | None:
        """A JSON schema constraining ``{key: ...}`` to this type, or None where only a check can help."""
        if self.kind in ("yesno", "choice"):
            prop: dict[str, Any] = {"type": "string", "enum": list(self.options)}
        elif self.kind == "number":
            prop = {"type": "integer", "minimum": self.least}
            if self.least:  # llama.cpp's schema grammar drops "minimum": the counts themselves, as an enum
                prop["enum"] = list(range(self.least, 100))
        elif self.kind == "color":
            prop = {"type": "string", "enum": list(self.options) or sorted(set(COLOR_WORDS) - {"grey", "golden", "blonde"})}
        elif self.names == "country":  # 249 names: a grammar llama.cpp builds at once (GeoNames' 6k cities: only checked)
            prop = {"type": "string", "enum": list(gazetteer.country_names())}
        else:
            return None
        return {"type": "object", "properties": {key: prop}, "required": [key]}

    # ------------------------------------------------------------- checking
    def coerce(self, answer: Any) -> str | None:
        """The answer in this type's canonical form, or None when it does not fit."""
        s = clean(answer)
        if not s or is_failure_answer(s) and not (self.kind == "number" and s in ("none", "no", "zero")):
            return None
        words = _words(s)
        if self.kind == "yesno":
            return yesno_word(s)
        if self.kind == "choice":
            hit = _match_option(s, self.options)
            return s if hit is not None and self.keep_words else hit
        if self.kind == "number":
            n = _number(s)
            return None if n is None or float(n) < self.least else n
        if self.kind == "color":
            found = [w for w in words if w in COLOR_WORDS]
            if not found:
                return None
            return s if len(words) <= 3 else " and ".join(dict.fromkeys(found))
        # open: anything but a bare yes/no, a failure or the question's own subject
        if s in _YES | _NO or (words and words[0] in ("yes", "no") and len(words) <= 2):
            return None
        if _asks_no_number(self.question) and re.fullmatch(r"[\d.,\s]+", s):
            return None  # "Who is the tall woman?" -> "2" names no one
        if self.names:  # its own words for the place it names ("lisbon"; "the united states" -> united states)
            return gazetteer.named_place(self.names, s)
        if _too_long(words, self.question) or self._only_colour(words):
            return None
        return None if repeats_question(s, self.question) else s

    def _only_colour(self, words: list[str]) -> bool:
        """A bare colour ("white") for what someone wears: the garment is asked, a colour may only go with
        it ("black coat"). A program that asked its patch "What color is the sweater?" instead of "What is the
        woman wearing over her sweater?" made "white" the answer."""
        return bool(words) and WEARING.search(self.question) is not None and all(w in COLOR_WORDS or w == "and" for w in words)

    def check(self, answer: Any) -> str | None:
        """None when ``answer`` fits this type, else the reason (for a re-ask or a report)."""
        s = clean(answer)
        if not s:
            return "the answer is empty"
        if self.coerce(s) is not None:
            return None
        if is_failure_answer(s):
            return f"{s!r} reports a failure, it does not answer the question"
        if self.kind == "number" and (n := _number(s)) is not None and float(n) < self.least:
            return (f"{s!r} is under {self.least}: no tool could look for the thing, so nothing says there is none; "
                    "give your best count of it")
        if self.kind == "open" and s.split()[0] in _YES | _NO:
            return f"{s!r} is a yes/no answer, but the question is open: name the thing asked about."
        if self.kind == "open" and _asks_no_number(self.question) and re.fullmatch(r"[\d.,\s]+", s):
            return (f"{s!r} is a bare number, but the question asks {self.question.split()[0].lower()}, not how many: "
                    "name the person, thing or place")
        if self.kind == "open" and self.names:
            return f"{s!r} is not the name of a {self.names}: the question asks which {self.names}; name one"
        if self.kind == "open" and _too_long(_words(s), self.question):
            return (f"{s[:60]!r}... is a long text of {len(_words(s))} words, but the question asks for a name or a short "
                    "phrase, not for the text read off the image: say what it asks in one to three words")
        if self.kind == "open" and self._only_colour(_words(s)):
            return f"{s!r} is only a colour, but the question asks what is worn: name the garment (a colour may go with it)"
        if self.kind == "open" and repeats_question(s, self.question):
            return (f"{s!r} only repeats what the question is about; answer what it asks about it "
                    "(a name, a thing, a place), not its subject")
        return f"{s!r} does not fit: the question is {self.describe()}"

    def fits(self, answer: Any) -> bool:
        return self.check(answer) is None

    def guess_schema(self, refused: Sequence[Any] = ()) -> dict[str, Any]:
        """The JSON schema of one best guess, asked for after answers that did not fit (``refused``): the
        answer's own where it has one; for a city, one of ``gazetteer.major_cities``; else a string kept
        off the :meth:`shunned` words."""
        if self.names == "city":
            return {"type": "string", "enum": list(gazetteer.major_cities())}
        closed = self.json_schema()
        if closed is not None:
            return dict(closed["properties"]["answer"])
        return {"type": "string", "not": {"enum": list(self.shunned(refused))}}

    def shunned(self, refused: Sequence[Any] = ()) -> tuple[str, ...]:
        """The words a best-guess reply of a free-text type is kept off (``typed.guesses_schema``): those
        that are no answer, for an open question "yes" and "no", and the content words of the short
        answers already refused. Asked for three guesses after "none", a small model answered "no" three
        times to "What does the note say?"; re-asked after a reply that only named the question's
        subject, it named that subject again."""
        words = list(NO_ANSWER_WORDS)
        if self.kind == "open":
            words += ["yes", "no", "yeah", "nope"]
        for answer in refused:
            said = [w for w in _words(clean(answer)) if w not in _FUNCTION_WORDS]
            if len(said) <= 3:  # a long text refused for its length: its words may hold the answer
                words += said
        return tuple(dict.fromkeys(words))


def _stem(word: str) -> str:
    """A light singular: "birds" -> "bird", "boxes" -> "box" (enough to match an option)."""
    for suffix, repl in (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("xes", "x"), ("ses", "s"), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2 and not word.endswith("ss"):
            return word[: -len(suffix)] + repl
    return word


def _stems(text: str) -> list[str]:
    return [_stem(w) for w in _words(text)]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def _match_option(answer: str, options: Sequence[str]) -> str | None:
    """The one option the answer names (whole words, singular or plural), or None when it names none or several."""
    low = answer.lower()
    exact = [o for o in options if o.lower() == low]
    if exact:
        return exact[0]
    words = _stems(low)
    hits = [o for o in options if _contains(words, [w for w in _stems(o) if w not in _ARTICLES] or _stems(o))]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:  # "dark blue" and "blue" both named: the longest wins when it holds the others
        longest = max(hits, key=len)
        return longest if all(h in longest for h in hits) else None
    return None


_TAIL_NOISE = {"side", "one", "ones", "part", "corner", "half", "color", "colour"}
# Words that end an option on its right: "... or the right side OF the image", "... or behind THE car".
_RIGHT_STOP = {"of", "in", "on", "at", "to", "from", "with", "than", "for", "the", "a", "an", "this", "that", "it", "he",
               "she", "they", "here", "there", "now", "today", "and", "its", "his", "her", "their", "my", "your", "our"}
_PATH_WORDS = {"toward", "towards", "away", "into", "onto", "through", "across", "along", "around", "past"}  # a path, not a thing
# A preposition repeated before the second option ("in the box or ON the sofa") is not part of it.
_LEAD_PREPS = {"at", "in", "on", "to", "from", "by", "near", "inside", "outside", "under", "over", "above", "below", "into", "during"}
# What stands after a preposition for a thing named before ("... or under IT", "... or outside of IT").
_BACK_REFERENCE = {"it", "them", "him", "her", "us", "me"}
# The prepositions that place a thing against another ("on top of the box or UNDER it").
_RELATION_PREPS = _LEAD_PREPS | {"behind", "beside", "beneath", "underneath"}
# A verb's particle ("taking off", "giving up"): part of the verb, not a preposition of a thing.
_PARTICLES = {"off", "up", "down", "out", "back"}
_LEFT_STOP = _AUX + ("the", "a", "an", "this", "that", "it", "he", "she", "they", "on", "in", "at", "of", "to",
                     "from", "with", "than", "for", "there", "which", "who", "what", "where")


# The lexicon's phrases of several words that stand as one option ("out of focus"), the longest first.
_SET_PHRASE = re.compile(r"\b(" + "|".join(map(re.escape, SET_PHRASES)) + r")\b")


def _strip(words: list[str]) -> str:
    words = [w for w in words if w not in _ARTICLES]
    while len(words) > 1 and words[-1] in _TAIL_NOISE:
        words.pop()
    return " ".join(words)


def _ing_verb(word: str) -> bool:
    """Whether ``word`` is a verb's -ing form ("coming", "sitting"): WordNet knows its stem as a verb."""
    return len(word) > 4 and word.endswith("ing") and wn.is_verb(word)


def _look_back(tokens: Sequence[str], end: int, span: int, found: Callable[[str], bool],
               stops: Sequence[str] = (",",)) -> int | None:
    """Where the nearest token before ``end`` that ``found`` accepts stands, read back at most ``span`` tokens; None
    where a token of ``stops`` (a comma: another item's option) or nothing comes first."""
    for k in range(end - 1, max(-1, end - 1 - span), -1):
        if tokens[k] in stops:
            return None
        if found(tokens[k]):
            return k
    return None


def _named_options(question: str) -> tuple[str, ...] | None:
    """("left", "right") for "... on the left or the right?"; None without an "A or B" in it.

    Token-based: the option after the last "or" runs until a stop word (a preposition, an article
    after a word); the options before it are the comma-separated items, each as long as the last one
    ("dark blue or light blue").
    """
    q = question.strip().lower()
    if re.search(r"\beither\b", q):
        return None  # "are there either cats or dogs" is a yes/no question
    # a set phrase is one token, so that neither side cuts it ("in focus or out of focus": not "focus" or "out")
    q = _SET_PHRASE.sub(lambda m: re.sub(r"[\s-]+", "_", m.group(0)), q)
    tokens = re.findall(r"[a-z0-9'_-]+|,", q)
    if "or" not in tokens:
        return None
    i = len(tokens) - 1 - tokens[::-1].index("or")
    right: list[str] = []
    after = tokens[i + 1:]
    # "above or below the box", "inside or outside it": two prepositions side by side are the options
    prep_pair = i > 0 and tokens[i - 1] in _LEAD_PREPS
    for k, t in enumerate(after):
        if t == ",":
            break
        if t in _ARTICLES and not right:
            continue
        if t in _LEAD_PREPS and not right and k + 1 < len(after) and after[k + 1] != "," and not prep_pair:
            continue  # "... at the top or AT the bottom": the option is "bottom" ("on or off" keeps "off")
        pair = t == "and" and right and right[-1] in COLOR_WORDS and k + 1 < len(after) and after[k + 1] in COLOR_WORDS
        if right and ((t in _RIGHT_STOP and not pair) or len(right) >= 3):
            break  # "... or black and white?": two colours joined by "and" are one option
        right.append(t)
    if not right or right == ["not"]:
        return None  # "... or not?" is a yes/no question
    # "on top of the box or under it", "inside the box or outside of it": the preposition is the second option, not
    # the pronoun (or the "of") after it; the first is then the preposition before the thing (below)
    rest = [t for t in after if t not in _ARTICLES]
    relation = (len(rest) in (2, 3) and rest[0] in _RELATION_PREPS and rest[-1] in _BACK_REFERENCE
                and rest[1:-1] in ([], ["of"]))  # the pronoun ends the question: "behind her" (not "behind her chair")
    if relation:
        right = [rest[0]]
    n = len(right)
    # Options before "or", read backwards: one group of up to n words, then another only after a
    # comma ("red, blue, or green"; "dark blue or light blue"; "in front of or behind").
    items: list[list[str]] = []
    j = i - 1
    nearest = (i, i)  # where the option just before "or" starts and ends in ``tokens``
    while j >= 0:
        if tokens[j] == ",":
            j -= 1
        while j >= 0 and tokens[j] in ("of", "to", "from") and not items:
            j -= 1  # a dangling preposition is not part of the option
        group: list[str] = []
        while j >= 0 and tokens[j] != "," and tokens[j] not in _LEFT_STOP and len(group) < n:
            group.insert(0, tokens[j])
            j -= 1
        if not group and not items and j >= 0 and tokens[j] not in _AUX and tokens[j] not in _ARTICLES:
            group = [tokens[j]]  # "on or off", "in or out": a preposition can be an option itself
            j -= 1
        if not group:
            break
        if not items:
            nearest = (j + 1, j + 1 + len(group))
        if (not items and len(group) > 1 and j == 1 and tokens[0] in _AUX and (tokens[j] in _ARTICLES or tokens[j] in POSSESSIVES)
                and group[0] not in COLOR_WORDS and wn.used_as_noun(group[0])):
            # "is the car red or dark blue": the noun of the question's own "the" is the subject, not the option ("in
            # the top left or the top right" keeps its words: that "the" is a place's)
            group = group[1:]
        items.insert(0, group)
        while j >= 0 and tokens[j] in _ARTICLES and j > 0 and tokens[j - 1] == ",":
            j -= 1  # "the bus, THE car or the bike"
        if j < 0 or tokens[j] != ",":
            break
    if items and relation:
        back = _look_back(tokens, nearest[0], 4, _RELATION_PREPS.__contains__, (",", "or", *_AUX))
        if back is not None:
            phrase = [tokens[back]]
            for t in tokens[back + 1:nearest[0]]:
                if t in _ARTICLES or t in ("of", "to"):
                    break
                phrase.append(t)  # "on top (of the box)"
            items[-1] = phrase
    elif (items and items[-1] and items[-1][0] in COLOR_WORDS and nearest[0] >= 2 and tokens[nearest[0] - 1] == "and"
            and tokens[nearest[0] - 2] in COLOR_WORDS):
        items[-1] = [tokens[nearest[0] - 2], "and", *items[-1]]  # "black and white or in color": one option, as after "or"
    if items and len(right) == 1 and right[0] in _PATH_WORDS and items[-1][0] not in _PATH_WORDS:
        # "facing toward us or away", "walking towards the camera or away from it": a bare path word is the second
        # option, so the first is the path word before it (read back no further than a comma), not what it leads to
        back = _look_back(tokens, nearest[0], 3, _PATH_WORDS.__contains__)
        if back is not None:
            items[-1] = [tokens[back]]
    elif items and _ing_verb(right[0]) and not _ing_verb(items[-1][0]):
        # "coming toward the camera or going away from it": a verb's -ing form opens the second option, so the
        # first is its own -ing verb (read back no further than a comma), not its last noun ("camera"), with the
        # words after it as the second option has them: up to as many, cut where a phrase of another thing starts
        back = _look_back(tokens, nearest[0], 4, _ing_verb)
        if back is not None:
            verb = [tokens[back]]
            for m, t in enumerate(tokens[back + 1:nearest[1]], back + 1):
                if t in _PARTICLES and m == nearest[1] - 1:
                    verb.append(t)  # "taking off or landing": the verb's particle just before "or" is its own
                    break
                if len(verb) >= len(right) or t in _RIGHT_STOP or t in _LEAD_PREPS or t in _PATH_WORDS:
                    break
                verb.append(t)
            items[-1] = verb
    options = [_strip(w).replace("_", " ") for w in items] + [_strip(right).replace("_", " ")]
    options = [o for o in dict.fromkeys(options) if o]
    return tuple(options) if len(options) >= 2 else None


def expected_type(question: str, choices: Sequence[str] | None = None) -> AnswerSpec:
    """The answer type ``question`` expects; dataset ``choices`` (multiple choice) win when given."""
    if choices:
        return AnswerSpec("choice", tuple(str(c).strip().lower() for c in choices), keep_words=True)
    q = question.strip().lower()
    words = _words(q)
    if not words:
        return AnswerSpec("open")
    if re.match(r"^(how many|how much \w+ (are|is) there|what (is the )?(number|count) of)\b", q):
        return AnswerSpec("number", question=question.strip())
    if re.search(r"\b(what|which)\s+(\w+\s+)?colou?rs?\b|\bcolou?r of\b|\bcolou?rs? (is|are|does|do)\b", q):
        return AnswerSpec("color", question=question.strip())
    first = words[0]
    if first in _AUX or (first in ("and", "so", "but") and len(words) > 1 and words[1] in _AUX):
        named = _named_options(q)
        if named:
            return AnswerSpec("choice", named, question=question.strip())
        return AnswerSpec("yesno", ("yes", "no"), question=question.strip())
    # "Which is bigger, the bus or the car?" / "Who is taller, A or B?"
    if first in ("which", "who", "what", "where") and re.search(r",.*\bor\b", q):
        named = _named_options(q.split(",", 1)[1])  # the options follow the comma ("facing, left or right": not "facing")
        if named:
            return AnswerSpec("choice", named, question=question.strip())
    for kind, pattern in _ASKS_PLACE_NAME:
        if pattern.search(q):
            return AnswerSpec("open", question=question.strip(), names=kind)
    return AnswerSpec("open", question=question.strip())


# "What country is this dish from?", "Which country's flag is it?", "In which city was this taken?"
_ASKS_PLACE_NAME: tuple[tuple[gazetteer.PlaceKind, re.Pattern[str]], ...] = (
    ("country", re.compile(r"\b(what|which)\s+(country|nation)('s)?\b|\b(country|nation)\s+(is|was)\s+(this|it|that)\b"
                           r"|\bname of (this|the|that) (country|nation)\b")),
    ("city", re.compile(r"\b(what|which)\s+(city|town)('s)?\b|\b(city|town)\s+(is|was)\s+(this|it|that)\b"
                        r"|\bname of (this|the|that) (city|town)\b")),
)


# Where a thing lies: the option words of a place question and the place each names.
PLACE_WORDS = {"left": "left", "right": "right", "top": "top", "upper": "top", "bottom": "bottom", "lower": "bottom",
               "middle": "middle", "center": "middle", "centre": "middle", "edge": "edge", "side": "edge",
               "corner": "edge", "border": "edge"}
_SIDE_WORDS = {"side", "half", "corner", "edge"}  # "... side of the photo": a side of the frame
_FRAME_ONLY = frozenset({"frame", "scene", "view"})  # with the photo's own nouns (lexicon.photo_nouns): the frame
# Which way a thing points or faces is a direction, not a place ("Which way is it facing, left or right?").
_DIRECTION_WORDS = {"way", "facing", "face", "faces", "pointing", "point", "points", "looking", "look", "looks",
                    "turned", "turning", "heading", "moving", "going", "leaning", "direction"}
_PLACE_TAIL = {"side", "part", "half", "corner", "edge", "of", "from", "in", "on", "the", "a", "an", "this", "that"}
_PLACE_LEAD = {"on", "to", "at", "in", "near", "towards", "toward", "the", "a", "an", "more", "further", "far",
               "located", "placed", "positioned", "standing", "sitting", "lying", "found", "shown", "seen", "parked"}


def _before_doing(words: Sequence[str]) -> list[str]:
    """The words of a thing's name before what it does: "person standing" -> person, "man standing at the back" ->
    man, "a van parked (by the gate)" -> van. An -ing or -ed verb after a word used mostly as a noun ends the name;
    "the swimming pool" keeps its -ing word, and what qualifies the thing ("the man in the cap", "a glass of wine")
    stays: it says which one."""
    for i in range(1, len(words)):
        if words[i].endswith(("ing", "ed")) and wn.is_verb(words[i]) and wn.used_as_noun(words[i - 1]):
            return list(words[:i])
    return list(words)


@functools.cache
def _frame_words() -> frozenset[str]:
    return photo_nouns() | _FRAME_ONLY


def asked_place(question: str) -> PlaceAsked | None:
    """The :class:`PlaceAsked` of a choice question between places, or None for any other question:
    "Is the lamp on the left or the right side of the picture?" -> lamp, left/right, the picture; "Is the
    boat in the middle or at the edge?" -> boat, middle/edge. Directions ("Which way is the
    horse facing, left or right?") are not places."""
    spec = expected_type(question)
    if spec.kind != "choice" or spec.keep_words:
        return None
    places = tuple(PLACE_WORDS.get(o) for o in spec.options)
    if None in places or len(set(places)) != len(places):
        return None
    words = _words(question.replace("?", " "))
    if _DIRECTION_WORDS & set(words) or not words or words[0] not in _AUX:
        return None
    first = min(i for i, w in enumerate(words) if w in PLACE_WORDS)
    last = max(i for i, w in enumerate(words) if w in PLACE_WORDS)
    thing = _before_doing(words[1:first])
    while thing and thing[-1] in _PLACE_LEAD:
        thing.pop()
    while thing and thing[0] in _ARTICLES:
        thing.pop(0)
    if not thing:
        return None
    tail = words[last + 1:]
    frame_named = bool(_SIDE_WORDS & set(words[first:last + 1] + tail[:1]))
    while tail and tail[0] in _SIDE_WORDS | {"part"}:  # "the left part" names no side of the photo
        tail.pop(0)
    reference = ""
    if tail and tail[0] in {"of", "from", "than"}:
        ref = tail[1:]
        while ref and ref[0] in _ARTICLES:
            ref.pop(0)
        if ref and set(ref) <= _frame_words():
            frame_named = True
        elif ref:
            reference = " ".join(ref)
    elif tail and set(w for w in tail if w not in _PLACE_TAIL) <= _frame_words():
        frame_named = frame_named or any(w in _frame_words() for w in tail)  # "... in the photo"
    elif tail:
        return None  # words after the options that name no frame nor a thing: not a plain place question
    return PlaceAsked(" ".join(thing), spec.options, places, reference, frame_named)


# A question that asks what people know of the thing pictured, not what the pixels show ("Is this fruit
# usually eaten raw or cooked?", "What is the pattern on this rug called?"): OK-VQA's kind.
_KNOWLEDGE = re.compile(r"\b(usually|typically|normally|commonly|generally|called|known (?:as|for)|famous|invented|"
                        r"originat\w*|comes? from|made (?:of|from)|built by|builds?|manufactur\w*|used for|served|"
                        r"eats?|native|sound)\b")
# words that end the noun phrase after "this": the question goes on ("this fruit usually", "this bridge in")
_AFTER_THING = _KNOWLEDGE.pattern + r"|\b(is|are|was|were|do|does|did|has|have|can|will|would|should|most|likely|"\
    r"of|in|on|at|to|from|for|by|with|and|or|that|which|made|come|comes|make|makes|live|lives|belong|belongs|look|looks)\b"


@dataclass(frozen=True)
class KnowledgeAsked:
    """A question about what is known of the thing it points at: ``phrase`` "this drink", ``head`` "drink",
    and where the phrase ends in the question, so the thing's name can follow it."""

    question: str
    phrase: str
    head: str | None  # None where the pronoun stands alone ("What is this used for?"): the tools name the thing
    end: int

    def naming(self, name: str) -> str:
        """The question, then the pictured thing named in a sentence of its own: "What is the pattern on
        this rug called? (This rug is a kilim.)". The question is left whole: with the name in brackets
        inside it ("this rug (kilim) called") a small model garbled the term, with the sentence it gave
        the right one; on 19 other knowledge questions the two forms agreed or the sentence did better
        (the bracket's name was echoed back as the answer). Put in place of the phrase, the name got an
        answer to another question (a sound for what an animal eats)."""
        plural = self.phrase.lower().startswith("these")
        article = "" if plural else ("an " if name[:1].lower() in "aeiou" else "a ")
        lead = self.phrase[:1].upper() + self.phrase[1:]
        return f"{self.question.rstrip()} ({lead} {'are' if plural else 'is'} {article}{name}.)"


def asked_knowledge(question: str) -> KnowledgeAsked | None:
    """The :class:`KnowledgeAsked` of a question that asks what is known of "this <thing>" (a cue like
    "usually", "called", "famous", "made of"), or None: "What color is this drink?" asks the pixels."""
    q = str(question)
    if not _KNOWLEDGE.search(q.lower()):
        return None
    # "this kind of ball", "this piece of furniture", "this pair of shoes": a word for a kind, a portion or a group
    # (WordNet) and "of" point at the thing that follows; what is known is known of it
    ahead = r"(?=\s+(?:" + _AFTER_THING + r")|\s*[?.!]|\s*$)"
    k = re.search(r"\b(this|these)\s+([a-z]+)\s+of\s+((?:[a-z]+\s+){0,2}?[a-z]+)" + ahead, q, re.I)
    if (k and k.group(3).lower() not in _FUNCTION_WORDS and not re.search(_AFTER_THING, k.group(3).lower())
            and wn.partitive(k.group(2).lower(), ("category", "part", "group"))):
        return KnowledgeAsked(q, k.group(0), k.group(3).split()[-1].lower(), k.end())
    m = re.search(r"\b(this|these)\s+((?:[a-z]+\s+){0,2}?[a-z]+)" + ahead, q, re.I)
    if not m or m.group(2).lower() in _FUNCTION_WORDS or re.search(_AFTER_THING, m.group(2).lower()):
        return None
    head = m.group(2).split()[-1].lower()
    if not wn.is_noun(head):  # "What is this used for?": the pronoun stands alone for the thing pictured, named by no word
        return KnowledgeAsked(q, m.group(1), None, m.end(1))
    return KnowledgeAsked(q, m.group(0), head, m.end())


def _number(s: str) -> str | None:
    """The first number of a cleaned answer, in digits ("3", "2.5"; "three" -> "3"), or None."""
    m = re.search(r"\d+(?:\.\d+)?", s)
    if m:
        return m.group(0)
    for phrase, n in sorted(_NUMBER_WORDS.items(), key=lambda kv: -len(kv[0])):
        if re.search(rf"\b{re.escape(phrase)}\b", s):
            return str(n)
    return None


def best_typed(candidates: Sequence[Any], spec: AnswerSpec) -> str | None:
    """The last candidate that fits ``spec`` (coerced), or None: the loop's fallback guess."""
    for c in reversed(list(candidates)):
        v = spec.coerce(c)
        if v is not None:
            return v
    return None


__all__ = ["AnswerKind", "AnswerSpec", "COLOR_WORDS", "NO_ANSWER_WORDS", "PLACE_WORDS", "KnowledgeAsked", "PlaceAsked", "asked_knowledge", "asked_place", "asks_anyone", "best_typed", "clean", "composed_of", "counted_thing", "expected_type",
           "against_search", "is_failure_answer", "miscount", "repeats_question"]
