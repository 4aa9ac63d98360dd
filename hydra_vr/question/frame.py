"""Parse a question once: what it asks for, about what, and what answers it.

``parse("What insect is on the leaf?")`` gives a :class:`QuestionFrame` whose fields the answering roles,
the checks and the strategies read instead of running their own patterns over the text. The answer type,
presence, count, place and knowledge parts come from :mod:`hydra_vr.answer_types`; what is new here are
the category a question asks for ("what animal", "which kind of bird": a WordNet noun, so a classifier's
label can be named at that level), negation, relation words and the reading cue, all from one place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hydra_vr import answer_types as at
from hydra_vr.asked import FocusAsked, LightAsked, OrientationAsked, PlaceAsked, SmileAsked
from hydra_vr.lexicon import wordnet as wn
from hydra_vr.lexicon.words import (ARTICLES, BACKGROUND, FOCUS_ONLY, FOCUS_POLES, FOCUS_WORDS, GENERIC_NOUNS, ORIENTATION_ONLY,
                                    ORIENTATION_POLES, POSSESSIVES, REGION_NOUNS, photo_nouns)

# Words that ask which kind ("what kind of bird"): the noun after "of" is the category.
_KIND_WORDS = ("kind", "type", "sort", "species", "breed", "variety", "make", "model", "brand")
# a question that asks for a reason ("Why is the road wet?", "For what reason ..."): its answer is a cause or a purpose
_REASON = re.compile(r"^\W*(?:(?:and|so|but)\s+)?why\b|\b(?:what|which) (?:is|was|could be|might be) the reason\b|\bfor what (?:reason|purpose)\b")
_NEGATION = re.compile(r"\b(not|no|never|nobody|nothing|none|neither|nor|without|isn't|aren't|doesn't|don't|didn't|"
                       r"wasn't|weren't|can't|cannot|won't|hasn't|haven't)\b")
# Spatial and comparative relations between two things ("the cup to the left of the plate").
_RELATIONS = re.compile(r"\b(left of|right of|on top of|next to|beside|behind|in front of|above|below|under|underneath|"
                        r"beneath|over|near|between|inside|on|holding|wearing|riding|bigger than|smaller than|taller than|"
                        r"closer to|farther from)\b")
# Nouns too general to name a category ("what thing is this?" asks for anything), with the lexicon's generic
# nouns, region nouns and the photo's own nouns: attributes, and the words of "what kind of ...".
_NOT_KINDS = frozenset({"one", "kind", "type", "sort", "color", "colour", "shape", "number", "time", "place", "way", "side"})


def _no_category(phrase: str) -> bool:
    return phrase in _NOT_KINDS or phrase in GENERIC_NOUNS or phrase in REGION_NOUNS or phrase in photo_nouns()


def asked_focus(text: str, spec: at.AnswerSpec) -> FocusAsked | None:
    """The :class:`FocusAsked` of a choice between a sharp and a blurry word, or of a yes/no that names one pole
    with a word of focus only ("blurry", "in focus"; not "sharp" alone, which a knife is); None otherwise, and for
    a negated yes/no."""
    low = text.lower()
    if spec.kind == "choice":
        poles = tuple((o, FOCUS_POLES.get(o)) for o in spec.options)
        if {p for _, p in poles} != {"sharp", "blurry"}:
            return None
        claims = tuple((o, p) for o, p in poles if p is not None)
    elif spec.kind == "yesno":
        said = FOCUS_WORDS.findall(low)
        poles = {FOCUS_POLES[w] for w in said}
        if len(poles) != 1 or not set(said) & FOCUS_ONLY or _NEGATION.search(low):
            return None
        pole = poles.pop()
        claims = (("yes", pole), ("no", "sharp" if pole == "blurry" else "blurry"))
    else:
        return None
    words = set(_words(FOCUS_WORDS.sub(" ", low)))
    region = ("background" if BACKGROUND.search(low) else
              "photo" if words & photo_nouns() and not words - photo_nouns() - _FOCUS_FRAME else "thing")
    return FocusAsked(region, claims)


_OPPOSITE_LIGHT = {"day": "night", "night": "day", "sunny": "overcast", "overcast": "sunny"}
# What a question of light is about: nothing named ("Is it sunny?"), the photo, or the weather, the sky, the time of day.
_SCENE_KINDS = ("atmospheric phenomenon", "time period", "sky")


def asked_light(text: str, spec: at.AnswerSpec, subject: str | None) -> LightAsked | None:
    """The :class:`LightAsked` of a choice between the two poles of one light measure ("night or day", "sunny or
    cloudy"; :func:`wordnet.light_pole`), or of a yes/no whose words name one pole ("Is it night?", "Is it
    raining?"); None otherwise, for a negated yes/no, and when the question is about a thing ("Is the water clear
    or cloudy?"): its subject must be none, the photo, or the weather, the sky or the time of day."""
    named_things = [w for w in (subject or "").split() if wn.light_pole(w) is None]  # "the sky" of "the sky clear"
    if named_things and subject not in photo_nouns() and not any(wn.word_is_a(w, k) for w in named_things
                                                                 for k in _SCENE_KINDS):
        return None
    if spec.kind == "choice":
        claims = tuple((o, wn.light_pole(o)) for o in spec.options)
        poles = {p for _, p in claims}
        if None in poles or len(poles) != 2 or _OPPOSITE_LIGHT[poles.pop()] not in poles:
            return None
        named = tuple((o, p) for o, p in claims if p is not None)
    elif spec.kind == "yesno":
        low = text.lower()
        poles = {p for w in _words(low) if (p := wn.light_pole(w)) is not None}
        if len(poles) == 2 and "day" in poles and poles & {"sunny", "overcast"}:
            poles.discard("day")  # "Is it a sunny day?" asks of the sky
        if len(poles) != 1 or _NEGATION.search(low):
            return None
        pole = poles.pop()
        named = (("yes", pole), ("no", _OPPOSITE_LIGHT[pole]))
    else:
        return None
    return LightAsked("time" if named[0][1] in ("day", "night") else "sky", named)


def asked_orientation(text: str, spec: at.AnswerSpec) -> OrientationAsked | None:
    """The :class:`OrientationAsked` of a yes/no with a word that asks which way up ("Is the sign upside down?": yes
    claims upside down, no upright; "Is it the right way up?" the other way round) or of a choice between the two
    ("upright or upside down?"); None otherwise and for a negated yes/no."""
    low = text.lower()
    if spec.kind == "choice":
        # an option may carry the subject's words before its own ("the page upright or upside down": "page upright")
        claims = tuple((o, next((p for w, p in ORIENTATION_POLES.items() if o == w or o.endswith(" " + w)), None))
                       for o in spec.options)
        if {p for _, p in claims} != {"upside down", "upright"}:
            return None
        return OrientationAsked(tuple((o, str(p)) for o, p in claims))
    said = ORIENTATION_ONLY.findall(low)
    if spec.kind != "yesno" or len({ORIENTATION_POLES[w] for w in said}) != 1 or _NEGATION.search(low):
        return None
    pole = ORIENTATION_POLES[said[0]]
    return OrientationAsked((("yes", pole), ("no", "upright" if pole == "upside down" else "upside down")))


def asked_smile(low: str, spec: at.AnswerSpec, action: str | None, negated: bool) -> SmileAsked | None:
    """The :class:`SmileAsked` of a yes/no whose verb smiles ("Is the boy grinning?": yes claims smiling), or of a choice
    with one smiling option ("smiling or frowning?"); None otherwise, for a negated yes/no, and where a smile only
    names who is asked about ("Is the smiling girl wearing a hat?": the verb is "wearing"). The verb is the frame's
    action, else a question's last word ("Is she smiling?": a pronoun is no subject to find a verb after)."""
    words = _words(low)
    verb = action or (words[-1] if words else None)
    if verb is None or not wn.smiles(verb):
        return None
    if spec.kind == "yesno" and not negated:
        return SmileAsked((("yes", "smiling"), ("no", "not smiling")))
    if spec.kind == "choice":
        claims = tuple((o, "smiling" if all(map(wn.smiles, o.split())) else "not smiling") for o in spec.options)
        if sum(c == "smiling" for _, c in claims) == 1:
            return SmileAsked(claims)
    return None


# the words of "Is this photo blurry?" besides the photo's own noun: what is left names no thing
_FOCUS_FRAME = frozenset({"is", "are", "was", "the", "this", "that", "a", "an", "it", "or", "whole", "entire", "image's",
                          "overall", "very", "quite", "too", "at", "all", "taken", "shot"})


@dataclass(frozen=True)
class QuestionFrame:
    """Everything a question says about its answer, parsed once.

    - ``answer``: the expected answer type (yes/no, choice and its options, number, colour, open).
    - ``category``: the kind of thing asked for, a WordNet noun ("which animal is grazing?" -> "animal");
      an answer names a kind of it.
    - ``subject``: the thing asked about, where the question names one ("kettle" of "What colour is the kettle on the stove?").
    - ``action``: the verb a question asks about its subject's doing ("holding" of "What is the man holding?",
      "sleep" of "Where does this parrot sleep?"), so naming the subject does not answer it; None for a question
      of what the subject is or is called ("What is the blue shape?", "What is the flower called?").
    - ``held``: the action is one of holding or carrying (WordNet's ``holds``): the answer is a thing with the subject;
      ``held_thing``, the thing a yes/no names after that verb ("Is the girl carrying a kite?" -> kite), else None.
    - ``whole``: the thing the subject belongs to, where the question names it ("the cat's collar", "the handle of
      the mug"): a tool may find the whole where it cannot find the part.
    - ``count``: what a "how many" question counts (its words, singular), and ``count_colours``, the colours it
      qualifies them with ("how many red cars" -> ("car",), ("red",)); ``counted``, the same as stems with the
      question's other words (what a program may have counted instead), for the miscount check.
    - ``presence``: what a presence question looks for and whether it is negated.
    - ``place``: the options of a place question ("left or right of the photo").
    - ``focus``: what a question about focus asks of which region ("Is the background blurry?").
    - ``light``: what a question about the photo's light asks ("by day or at night?", "Is it snowing?").
    - ``orientation``: a question of which way up a thing is ("Is the label upside down?").
    - ``smile``: a question whether someone smiles ("Is the girl smiling?").
    - ``knowledge``: a question about what is known of "this <thing>".
    - ``reading``: the question asks for text read off the image.
    - ``reason``: the question asks why (a cause or a purpose is the answer).
    - ``negated``: a negation word is in it; ``relations``: relation words between things.
    """

    text: str
    answer: at.AnswerSpec
    category: str | None = None
    subject: str | None = None
    whole: str | None = None
    action: str | None = None
    held: bool = False
    held_thing: str | None = None
    count: tuple[str, ...] | None = None
    count_colours: tuple[str, ...] = ()
    counted: at.Counted | None = None
    presence: at.Presence | None = None
    place: PlaceAsked | None = None
    focus: FocusAsked | None = None
    light: LightAsked | None = None
    orientation: OrientationAsked | None = None
    smile: SmileAsked | None = None
    knowledge: at.KnowledgeAsked | None = None
    reading: bool = False
    reason: bool = False
    negated: bool = False
    relations: tuple[str, ...] = field(default=())

    @property
    def kind(self) -> str:
        return self.answer.kind

    def off_category(self, answer: str) -> str | None:
        """Why ``answer`` names no kind of the category asked for ("which utensil?" -> "cup"), or None. Judged where the
        category is a kind of thing a photo shows (``wordnet.names_things``: not "what language"); the whole answer,
        else its last word, is looked up in WordNet, and a name it does not know is left alone."""
        if self.category is None or not wn.names_things(self.category):
            return None
        name = wn.answer_noun(answer)
        if name is None or wn.could_be_a(name, self.category):
            return None
        return f"{answer!r} is not a kind of {self.category} (WordNet); the question asks which {self.category}"

    def summary(self) -> dict[str, object]:
        """The fields that are set, for printing and traces."""
        out: dict[str, object] = {"kind": self.kind}
        if self.answer.options:
            out["options"] = list(self.answer.options)
        for name in ("category", "subject", "whole", "action", "held", "held_thing", "count", "count_colours", "reading", "reason", "negated", "relations"):
            value = getattr(self, name)
            if value:
                out[name] = list(value) if isinstance(value, tuple) else value
        if self.presence:
            out["presence"] = {"thing": self.presence.thing, "negated": self.presence.negated, "where": self.presence.where}
        if self.place:
            out["place"] = {"thing": self.place.thing, "options": list(self.place.options), "reference": self.place.reference}
        if self.focus:
            out["focus"] = {"region": self.focus.region, "claims": dict(self.focus.claims)}
        if self.light:
            out["light"] = {"measure": self.light.measure, "claims": dict(self.light.claims)}
        if self.orientation:
            out["orientation"] = dict(self.orientation.claims)
        if self.smile:
            out["smile"] = dict(self.smile.claims)
        if self.knowledge:
            out["knowledge"] = {"thing": self.knowledge.phrase, "head": self.knowledge.head}
        return out


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z'\-]*", text.lower())


def _noun_phrase(words: Sequence[str]) -> str | None:
    """The longest leading run of ``words`` WordNet knows as a noun ("fire truck", else "fire"), singular."""
    for n in range(min(3, len(words)), 0, -1):
        phrase = " ".join(words[:n])
        if wn.is_noun(phrase):
            return wn.singular(phrase)  # "sea animals" -> sea animal, as "animals" -> animal
    return None


def asked_category(question: str) -> str | None:
    """The kind of thing an open question asks for, a WordNet noun, or None.

    "What animal is that?", "Which bird is on the branch?", "What kind of insect is shown?", "What type of
    vehicle is parked there?", "What is this fruit?" -> animal, bird, insect, vehicle, fruit. "What is the man
    holding?" asks for no category; nor do "what colour", "what time", "what kind of thing".
    """
    words = _words(question)
    if len(words) < 2 or words[0] not in ("what", "which"):
        return None
    rest = words[1:]
    if rest[0] in _DO:
        return None  # "what do birds eat": a do-question asks what the thing does ("does" is a noun to WordNet too)
    if rest[0].endswith("'s"):
        return None  # "which city's bridge": asks for the owner by name, no kind of thing
    if rest[0] in _KIND_WORDS and len(rest) > 2 and rest[1] == "of":  # "what kind of bird"
        rest = rest[2:]
    elif rest[0] in _TAXON_WORDS and len(rest) > 1:
        # "what breed is the dog?", "which species does this bird belong to?": the kind of the thing asked about
        subject = _subject(question)[0]
        kind = wn.singular(subject.split()[-1]) if subject else None
        return None if kind is None or _no_category(kind) or not wn.names_things(kind) else kind
    elif rest[0] in ("is", "are") and len(rest) > 2 and rest[1] in ("this", "that", "the", "these", "those"):
        rest = rest[2:]  # "what is this animal?": only when nothing follows the noun phrase but a place
        phrase = _noun_phrase(rest)
        tail = rest[len(phrase.split()):] if phrase else rest
        if phrase is None or (tail and tail[0] not in ("in", "on", "at", "here", "there", "shown", "pictured")):
            return None
        if any(_progressive(w) for w in tail):
            return None  # "what is the boy on the bench eating": asks what he eats, not which boy
        return None if _no_category(phrase) else phrase
    if rest[0] in at.COLOR_WORDS or rest[0] in _BE:
        return None  # "what are rabbits like these called": "are" (a unit of area to WordNet) names no kind
    # "what wooden piece of furniture", "which small bird": adjectives (no clear noun sense in WordNet) describe the
    # kind, where the words as written name none ("musical instrument" is a noun of its own)
    lead = next((i for i, w in enumerate(rest[:3]) if not (wn.is_adjective(w) and wn.clear_noun_sense(w) is None)), 0)
    for k in range(lead + 1):
        words = rest[k:]
        phrase = _noun_phrase(words)
        if phrase is None or _no_category(phrase) or (k and not wn.names_things(phrase)):
            continue  # past adjectives, a kind of thing a photo shows ("which two words": no category)
        tail = words[len(phrase.split()):]
        if len(phrase.split()) == 1 and _said_as_verb(words[0]) and (not tail or not wn.is_verb(tail[0])):
            return None  # "what sits on the shelf": the question's verb, not a kind of thing (a sit)
        # "what reptile is that", "which bird sits ...", "what animal sleeps ...", "which birds sit ...": a verb (its
        # base form after a plural) or the end follows; "what man ..." asks "who". After a number the word is what it
        # counts ("which three letters"), not a verb.
        last = words[len(phrase.split()) - 1]  # the kind's last word as written
        plural = wn.singular(last) != last
        if not tail or tail[0] in _AFTER_KIND or (
                (_finite_verb(tail[0]) or plural and _base_verb(tail[0]))
                and not ((sense := wn.main_sense(phrase)) is not None and wn.is_a(sense, "number"))):
            return phrase
    return None


_DO = frozenset({"do", "does", "did"})
_BE = frozenset({"is", "are", "was", "were"})
# Kind words that name a kind of the thing asked about when no "of" follows ("what breed is the dog"); not "make",
# "model" or "brand", whose answers are names of makers, not kinds of the thing
_TAXON_WORDS = frozenset({"kind", "type", "sort", "species", "breed", "variety"})
# Words that may follow the kind a question asks for: a form of be or do, a modal ("what food would ..."), a place
_AFTER_KIND = _BE | frozenset({"do", "does", "can", "could", "might", "would", "will", "should", "may", "must", "in",
                               "on", "at", "shown", "pictured", "here", "there"})


def _said_as_verb(word: str) -> bool:
    """Whether ``word`` is a verb's form of its own ("hangs", "flies") that the tagged corpus saw more often as a verb
    than as a noun: after "what" it is the question's verb ("what flies over the lake"), not a kind named."""
    base = wn.wordnet().morphy(word, "v")
    return _finite_verb(word) and base is not None and wn.seen_as(base, "v") > wn.seen_as(wn.singular(word), "n")


def _do_verb(words: Sequence[str]) -> int:
    """Where the verb of a do-question stands in ``words`` (what follows its "the"): the first base-form verb after a
    noun phrase that is not followed by another ("the old truck have": 'truck' may be a verb too, 'have' is the one);
    ``len(words)`` where none is."""
    for i, w in enumerate(words):
        if (_base_verb(w) and _names_a_thing(_subject_phrase(words[:i]))
                and not (i + 1 < len(words) and _base_verb(words[i + 1]))):
            return i
    return len(words)


def _names_a_thing(phrase: str | None) -> bool:
    """Whether a noun phrase ends on a word used mostly as a noun (or one WordNet does not know): "the old" names
    nothing yet, so in "the old man sit" 'man' is no verb."""
    last = phrase.split()[-1] if phrase else None
    return last is not None and (wn.used_as_noun(last) or wn.unknown(last))


def _base_verb(word: str) -> bool:
    """A verb in its base form ("hold", "wear", "have"): after a do-question's subject it says what the subject does."""
    return wn.is_verb(word) and wn.wordnet().morphy(word, "v") == word


def _finite_verb(word: str) -> bool:
    """A verb in a form of its own, not its base ("sits", "sleeps", "lies", "perched"): after a noun phrase it is
    the verb of what the phrase names."""
    return wn.is_verb(word) and wn.wordnet().morphy(word, "v") not in (None, word)


def _progressive(word: str) -> bool:
    """A verb's -ing form ("holding", "eating"): what a thing is doing."""
    return word.endswith("ing") and wn.is_verb(word)


def _action(low: str, subject: str | None) -> str | None:
    """The verb after ``subject`` that says what it does: the first one in a do-question ("where does this parrot
    usually sleep"), else a progressive form ("what is the man holding"); None when there is no subject or verb."""
    words = _words(low)
    head = subject.split()[-1] if subject else None
    if head not in words:
        return None
    at = words.index(head)
    tail = words[at + 1:]
    do_question = not _DO.isdisjoint(words[:at])  # a do anywhere before the subject, as _subject reads it
    for before, w in zip([head, *tail], tail):
        if w in _STOP and w not in ("doing", "holding", "wearing"):
            continue
        if before in ARTICLES or before in POSSESSIVES:
            continue  # "the building", "the smiling man": an -ing word after a determiner names or describes a thing
        if (do_question and wn.is_verb(w) and not wn.is_adjective(w)) or _progressive(w):
            return w
    return None


def _after_verb(low: str, verb: str) -> str | None:
    """The noun phrase right after ``verb`` in ``low`` past an article or a possessive, as :func:`_subject_phrase` reads it
    (its adjectives kept: "holding a red kite" -> "red kite"; a single noun singular: "holding balloons" -> "balloon");
    None where a preposition or nothing follows ("holding in his hand")."""
    words = _words(low)
    if verb not in words:
        return None
    tail = [w for w in words[words.index(verb) + 1:] if w not in ARTICLES and w not in POSSESSIVES]
    phrase = _subject_phrase(tail)
    return wn.singular(phrase) if phrase and " " not in phrase else phrase


def _subject(question: str) -> tuple[str | None, str | None]:
    """(subject, whole) of a question: the noun phrase after its first article ("the red bus"), or None; and the
    thing it belongs to where the question names one, by a possessive ("the horse's mane" -> mane, horse) or by
    "of" after a part ("the handle of the mug" -> handle, mug; WordNet says what is a part), else None. The phrase
    runs while WordNet knows each word as a noun or an adjective, and ends on a noun that is no colour."""
    if (named := _attribute_noun(question)) is not None:
        return named
    if m := _WH_OWNER.match(question.lower()):  # "which city's bridge is this?": the bridge, of a city
        subject = _subject_phrase(_words(m.group(2)))
        if subject:
            return subject, m.group(1)
    # a possessive pronoun opens a noun phrase as an article does: "What colour is his scarf?" asks about the scarf
    m = re.search(r"\b(?:the|this|that|these|those|a|an|both|each|every|" + "|".join(sorted(POSSESSIVES)) + r")\s+(.+)$",
                  question.lower())
    if not m:
        return None, None
    words = _words(m.group(1))
    # "(what colour) does the cat have": a do before the phrase lets its verb end it
    if not _DO.isdisjoint(_words(question[:m.start()])):
        words = words[:_do_verb(words)]
    if (len(words) > 2 and words[1] == "of" and any(w.endswith(("'s", "s'")) for w in words[2:5])
            and wn.partitive(_US.get(words[0], words[0]), ("attribute",))):
        # "the colour of the girl's scarf": the attribute asks about what follows, possessive and all
        words = [w for w in words[2:3] if w not in ARTICLES and w not in POSSESSIVES] + words[3:]
    owner = next((i for i, w in enumerate(words[:3]) if w.endswith(("'s", "s'"))), None)
    if owner is not None:  # "the red car's roof": the roof, of the red car
        whole = _subject_phrase([*words[:owner], words[owner].removesuffix("'s").removesuffix("'")])
        subject = _subject_phrase(words[owner + 1:])
        return (subject, whole) if subject else (whole, None)
    subject = _subject_phrase(words)
    rest = words[len(subject.split()):] if subject else []
    if subject and rest[:1] == ["of"] and wn.is_part(subject.split()[-1]):
        return subject, _subject_phrase([w for w in rest[1:] if w not in ARTICLES])
    return subject, None


_SUBJECT_PRONOUNS = frozenset({"i", "you", "we", "they", "he", "she", "it"})
# "which/what/whose NOUN's ...": the noun is the owner the question asks for, what follows the thing it names
_WH_OWNER = re.compile(r"^\W*(?:what|which|whose)\s+([a-z]+)'s\s+(.+)$")
_ATTRIBUTE_LEAD = re.compile(r"^\W*(?:what|which)\s+([a-z]+)\s+(.+?)\s+(is|are|was|were|does|do|did)\s+(.+)$")


def _attribute_noun(question: str) -> tuple[str, str | None] | None:
    """(subject, whole) of a question that names an attribute, then its thing, then a verb: "What colour shirt is
    the man wearing?" -> shirt, man; "Which colour hair does she have?" -> hair, None (WordNet says which word is
    an attribute). None for any other question ("What colour is the car?", "What kind of dog is this?")."""
    m = _ATTRIBUTE_LEAD.match(question.lower())
    if not m or not wn.partitive(_US.get(m.group(1), m.group(1)), ("attribute",)):
        return None
    words = _words(m.group(2))
    subject = _subject_phrase(words)
    if subject is None or len(subject.split()) != len(words):
        return None  # "what colour in the sky is": no noun phrase of its own between the attribute and the verb
    rest = f"{m.group(3)} {m.group(4)}" if m.group(3) in _DO else m.group(4)  # "does the boy have": 'have' ends it
    return subject, _subject(rest)[0]


# Before "of", a word for a kind or an attribute names what follows: "this kind of ball" and "the colour of the
# car" ask about the ball and the car. A group or an arrangement stays the thing asked about ("the row of seats",
# "the column of windows" are one thing in a photo).
_OF_NAMES_WHAT_FOLLOWS = ("category", "attribute")


def _subject_phrase(tail: Sequence[str]) -> str | None:
    """The noun phrase that starts ``tail``: it runs while WordNet knows each word as a noun or an adjective, and
    ends on a noun that is no colour, and past its first word on one used mostly as a noun; after a word for a kind
    and "of", the noun that follows (:func:`_noun_phrase`)."""
    words: list[str] = []
    for i, w in enumerate(tail[:4]):
        if w == "of" and words and wn.partitive(_US.get(words[-1], words[-1]), _OF_NAMES_WHAT_FOLLOWS):
            return _noun_phrase([x for x in tail[i + 1:] if x not in ARTICLES]) or " ".join(words)
        if w in ARTICLES and not words:
            continue  # "this a bike" (of "is this a bike?"): the phrase starts past the article
        if w in _STOP or w in _AUXILIARIES or w in ARTICLES or not (
                wn.is_noun(w) or wn.is_adjective(w) or wn.unknown(w)):
            break
        if words and _progressive(w) and any(wn.used_as_noun(x) for x in words):
            break  # "the chef cutting": what the thing does, not part of its name ("the tall painting" is a name)
        if words and tail[i + 1:i + 2] and (tail[i + 1] in _SUBJECT_PRONOUNS or tail[i + 1] in _AUXILIARIES):
            break  # "the label can you read", "the ears can be seen": a modal before its subject or verb opens a clause
        words.append(w)
    while words and (words[-1] in at.COLOR_WORDS or not (wn.is_noun(words[-1]) or wn.unknown(words[-1]))
                     or len(words) > 1 and not wn.used_as_noun(words[-1])):
        words.pop()  # "the kettle hot", "the ears floppy": a word used mostly as an adjective says what the thing is
    return " ".join(words) or None


def _before_options(phrase: str, options: Sequence[str]) -> str:
    """``phrase`` up to the first of its words (past its first) that opens one of a choice's ``options``: WordNet knows
    "full" and "modern" as nouns too, so "the jug empty or full" read as one noun phrase. An option that is the phrase
    itself ("the red car or the blue car") stays."""
    words, opening = phrase.split(), {o.split()[0] for o in options if o.split()}
    cut = next((i for i, w in enumerate(words) if i and w in opening), len(words))
    return " ".join(words[:cut])


# WordNet's main sense of "colour" is a paint (colouring material); its American spelling is the attribute
_US = {"colour": "color"}

_STOP = frozenset({"or", "and", "in", "on", "at", "of", "with", "is", "are", "to", "from", "for", "by", "doing", "holding",
                   "wearing", "that", "which", "who", "above", "below", "under", "behind", "near", "beside", "between",
                   "over", "across", "through", "along", "around", "against", "into", "onto", "beyond", "past", "up",
                   "down", "off", "out", "inside", "outside", "next"})
# auxiliaries WordNet also knows as nouns ("be", beryllium; "does", deer): in a noun phrase a verb, not a name
_AUXILIARIES = frozenset({"be", "been", "being", "do", "does", "did", "have", "has", "had"})


def parse(question: str, choices: Sequence[str] | None = None) -> QuestionFrame:
    """The :class:`QuestionFrame` of ``question`` (dataset multiple-choice ``choices`` win for the type)."""
    text = str(question).strip()
    if not text:
        raise ValueError("an empty question has no frame")
    spec = at.expected_type(text, choices)
    low = text.lower()
    counted = at.counted_thing(text)
    count = count_colours = None
    if counted is not None:
        count_colours = tuple(w for w in counted.phrase if w in at.COLOR_WORDS)
        things = [w for w in counted.phrase if w not in at.COLOR_WORDS]
        count = tuple(wn.singular(w) for w in things) or None
    category = asked_category(text) if spec.kind == "open" else None
    presence, place, knowledge = at.asked_presence(text), at.asked_place(text), at.asked_knowledge(text)
    # what the question is about: what it looks for, counts, places or names the kind of ("which bird ... on the
    # fence" is about the bird) before any other noun phrase
    named, whole = _subject(text)
    if spec.kind == "choice" and named:  # "Is the jug empty or full?": the options say what is asked of the jug
        named = _before_options(named, spec.options)
    # "what size is the pizza?": a property is asked of the pizza; "what animal is on the fence?" is about the animal
    kind_named = category is not None and not wn.partitive(category, ("attribute",))
    subject = (presence.thing if presence else " ".join(count) if count else place.thing if place
               else knowledge.head if knowledge else category if kind_named else named)
    whole = whole if subject == named else None
    action = _action(low, subject)
    held = action is not None and wn.holds(action)
    return QuestionFrame(
        text=text,
        answer=spec,
        category=category,
        subject=subject,
        whole=whole,
        action=action,
        held=held,
        held_thing=_after_verb(low, action) if held else None,
        count=count,
        count_colours=count_colours or (),
        counted=counted,
        presence=presence,
        place=place,
        focus=asked_focus(text, spec),
        light=asked_light(text, spec, subject),
        orientation=asked_orientation(text, spec),
        smile=asked_smile(low, spec, action, bool(_NEGATION.search(low))),
        knowledge=knowledge,
        reading=at.asks_to_read(text),
        reason=bool(_REASON.search(low)),
        negated=bool(_NEGATION.search(low)),
        relations=tuple(dict.fromkeys(m.group(1) for m in _RELATIONS.finditer(low))),
    )
