"""The question frame: one parse that says what a question asks for (phrasings of this test's own)."""

from __future__ import annotations

import pytest

from hydra_vr.question import parse


@pytest.mark.parametrize(("question", "category"), [
    ("What animal is grazing in the field?", "animal"),
    ("Which bird sits on the wire?", "bird"),
    ("What kind of insect is on the window?", "insect"),
    ("What type of boat is moored there?", "boat"),
    ("What is this vegetable?", "vegetable"),
    ("what sort of tree is that?", "tree"),
    ("What is the woman carrying?", None),     # asks for a thing, no category named
    ("What colour is the scarf?", None),        # a colour question
    ("What time does the clock show?", None),   # "time" names no kind of thing
    ("What kind of thing is this?", None),      # too general to be a category
    ("Which small lizard is on the rock?", "lizard"),           # adjectives before the kind describe it
    ("What old wooden vehicle is parked by the barn?", "vehicle"),
    ("What electric musical instrument is on the stage?", "musical instrument"),  # a compound noun stays whole
    ("Which three letters are on the flag?", None),              # letters are no kind of thing a photo shows
    ("What reptile basks on the wall?", "reptile"),             # any verb form of its own follows the kind
    ("Which fish swam past the diver?", "fish"),
    ("What mammal naps under the porch?", "mammal"),
    ("What is the girl feeding the goat?", None),               # a verb's base or -ing form names no kind
    ("Which ducks swim in the pond?", "duck"),                  # after a plural the verb's base form is its own
    ("What are boats like these called?", None),                # "are" (a unit of area to WordNet) names no kind
    ("What kind of mushrooms sprout near the log?", "mushroom"),
    ("What sort of snack would a hiker pack?", "snack"),         # a modal follows the kind
    ("What species are the geese?", "goose"),                   # a taxon word alone asks for a kind of the subject
    ("Which variety does this apple belong to?", "apple"),
    ("What floats in the bucket?", None),                     # the question's verb, not a kind named
    ("What signs are on the door?", "sign"),                    # a noun that is a verb too, before a verb
    ("What farm animals are these?", "farm animal"),            # a compound kind, singular as a single word is
])
def test_category_asked(question: str, category: str | None) -> None:
    assert parse(question).category == category


def test_choice_frame_keeps_the_options_and_the_subject() -> None:
    frame = parse("Is the teapot blue or white?")
    assert frame.kind == "choice" and frame.answer.options == ("blue", "white") and frame.subject == "teapot"


@pytest.mark.parametrize(("question", "subject"), [
    ("Which country first bred this kind of horse?", "horse"),    # the kind's noun, not "kind"
    ("What is this type of tree grown for?", "tree"),
    ("Who usually drives this sort of truck?", "truck"),
    ("What colour is the row of lockers?", "row"),                # an arrangement is one thing in a photo
    ("What is the lid of the jar made of?", "lid"),               # a part stays the thing asked about
])
def test_subject_after_of(question: str, subject: str) -> None:
    assert parse(question).subject == subject


def test_count_frame_singular_with_its_colour() -> None:
    frame = parse("How many yellow taxis are waiting at the rank?")
    assert frame.kind == "number" and frame.count == ("taxi",) and frame.count_colours == ("yellow",)
    assert frame.subject == "taxi"  # what is counted, not the rank it waits at


def test_negated_presence() -> None:
    frame = parse("Is there no cat under the table?")
    assert frame.kind == "yesno" and frame.negated and frame.subject == "cat"
    assert frame.presence is not None and frame.presence.thing == "cat" and frame.presence.negated
    assert "under" in frame.relations


def test_knowledge_and_reading_cues() -> None:
    knowledge = parse("What is this pastry usually filled with?")
    assert knowledge.knowledge is not None and knowledge.knowledge.head == "pastry" and not knowledge.reading
    reading = parse("What does the banner over the gate say?")
    assert reading.reading and reading.subject == "banner" and reading.knowledge is None
    # a wh-word before "does": the verb still ends the subject ("plaque", not "plaque say")
    short = parse("What does the plaque say?")
    assert short.reading and short.subject == "plaque" and short.action == "say"
    carried = parse("What does the girl carry?")
    assert carried.subject == "girl" and carried.held
    # the do after a wh-word and an attribute ends the subject too ("fox", not "fox have")
    assert parse("What colour does the fox have?").subject == "fox"
    assert parse("Which colour do her boots have?").subject == "boots"


def test_subject_phrase_ends_on_its_noun() -> None:
    # a word used mostly as an adjective after the thing says what it is, it names nothing ("kettle", not "kettle hot")
    assert parse("Is the kettle hot?").subject == "kettle"
    assert parse("Are the puppy's ears floppy?").subject == "ears"
    # an -ing noun after adjectives alone is the thing's name, not what it does ("the tall painting")
    assert parse("Is the tall painting on the left or on the right?").subject == "tall painting"
    assert parse("Is the girl running?").subject == "girl"


def test_place_question() -> None:
    frame = parse("Is the lighthouse on the left or the right of the picture?")
    assert frame.place is not None and frame.place.thing == "lighthouse" and set(frame.place.places) == {"left", "right"}


def test_summary_lists_only_what_is_set() -> None:
    summary = parse("Which flower is in the vase?").summary()
    assert summary == {"kind": "open", "category": "flower", "subject": "flower"}


def test_an_empty_question_is_refused() -> None:
    with pytest.raises(ValueError, match="empty question"):
        parse("   ")


def test_a_category_question_is_about_the_kind_it_asks_for() -> None:
    # "which parrot ... on the railing" is about the parrot, not the railing it sits on
    frame = parse("Which parrot is sitting on the railing?")
    assert (frame.category, frame.subject) == ("parrot", "parrot")
    assert parse("What colour is the mug on the shelf?").subject == "mug"  # no category: the first noun phrase


@pytest.mark.parametrize(("question", "subject", "whole"), [
    ("What colour is the kitten's collar?", "collar", "kitten"),
    ("Is the old truck's bumper rusty?", "bumper", "old truck"),
    ("What colour is the lid of the teapot?", "lid", "teapot"),  # a part before "of"
    ("What colour is the kite of the boy?", "kite", None),  # not a part: "of" names no whole
    ("How many apples are in the bowl of fruit?", "apple", None),  # what it counts is the subject
    ("What is the colour of the toddler's scarf?", "scarf", "toddler"),  # an attribute, "of", then a possessive
    ("What colour scarf is the toddler wearing?", "scarf", "toddler"),  # the attribute's noun, then who has it
    ("Which color boots does the hiker have on?", "boots", "hiker"),  # a do-question: "have" ends the whole
    ("What colour is his scarf?", "scarf", None),  # a possessive pronoun opens the phrase as an article does
    ("Which colour are their gloves?", "gloves", None),
    # a word newer than WordNet is a noun where a noun stands; a hyphenated one as WordNet writes it
    ("What colour is the hoodie of the cyclist?", "hoodie", None),
    ("Is the toddler's T-shirt striped?", "t-shirt", "toddler"),
])
def test_the_whole_a_part_belongs_to(question: str, subject: str, whole: str | None) -> None:
    frame = parse(question)
    assert (frame.subject, frame.whole) == (subject, whole)


def test_an_attribute_before_of_names_what_follows() -> None:
    assert parse("What is the colour of the scooter?").subject == "scooter"
    assert parse("What is the size of the parcel?").subject == "parcel"
    assert parse("How many chairs stand in the row of chairs?").subject == "chair"


@pytest.mark.parametrize(("question", "subject"), [
    ("What colour is the scooter?", "scooter"), ("What kind of bird sits on the wire?", "bird"),
    ("What colour in the painting is brightest?", "painting"),  # no noun of its own between the attribute and the verb
    ("What is next to her?", None),  # an object pronoun opens no phrase
])
def test_only_an_attribute_with_its_own_noun_before_the_verb_names_the_subject(question: str, subject: str | None) -> None:
    frame = parse(question)
    assert (frame.subject, frame.whole) == (subject, None)


@pytest.mark.parametrize(("question", "answer", "refused"), [
    ("Which kind of utensil is beside the plate?", "fork", False),    # cutlery, WordNet's "eating utensil": a utensil by its name
    ("Which kind of utensil is beside the plate?", "spatula", False),  # under utensil.n.01 itself
    ("Which kind of utensil is beside the plate?", "cup", True),
    ("Which vehicle is parked by the gate?", "truck", False),
    ("Which vehicle is parked by the gate?", "tree", True),
])
def test_an_answer_off_the_category_asked_is_refused_by_wordnet(question: str, answer: str, refused: bool) -> None:
    frame = parse(question)
    assert frame.category is not None  # the check is the category's
    why = frame.off_category(answer)
    assert (why is not None) == refused
    if refused:
        assert f"is not a kind of {frame.category}" in why


@pytest.mark.parametrize(("question", "subject", "action"), [
    ("Does the girl carry a bag?", "girl", "carry"),          # the verb after the subject ends its phrase
    ("Does the old truck have a trailer?", "old truck", "have"),
    ("Does the green train stop at this station?", "green train", "stop"),  # 'green' alone names no subject: past it
    ("Do the boys play football?", "boys", "play"),
    ("Is this a tractor?", "tractor", None),  # the article after "this" starts no phrase of its own
    ("How often does the ferry sail?", "ferry", "sail"),  # the do stands past the first two words
    ("Where does the old man usually sit?", "old man", "sit"),  # 'man' may be a verb, but "the old" names nothing yet
    ("What do boats carry on this river?", "river", None),  # "what do" asks for no category named "do"
    ("Do both mugs have handles?", "mugs", "have"),  # "both" opens a noun phrase as an article does
])
def test_a_do_questions_subject_ends_at_its_verb(question: str, subject: str, action: str) -> None:
    frame = parse(question)
    assert (frame.subject, frame.action) == (subject, action)


@pytest.mark.parametrize(("question", "subject", "category"), [
    ("What size is the teapot?", "teapot", "size"),  # a property (WordNet attribute) is asked of the teapot
    ("Which reptile is on the rock?", "reptile", "reptile"),  # a kind of thing: the thing asked about
])
def test_a_property_asked_leaves_the_subject_to_its_thing(question: str, subject: str, category: str) -> None:
    frame = parse(question)
    assert (frame.subject, frame.category) == (subject, category)


@pytest.mark.parametrize(("question", "subject"), [
    ("Is the bowl empty or full?", "bowl"),  # WordNet knows "empty" and "full" as nouns too
    ("Is the bridge old or modern?", "bridge"),
    ("Is the sky bright or dark?", "sky"),
    ("Is the red kite or the green kite higher?", "red kite"),  # an option that is the phrase itself stays
])
def test_a_choice_questions_subject_ends_before_its_options(question: str, subject: str) -> None:
    assert parse(question).subject == subject


@pytest.mark.parametrize(("question", "action"), [
    ("What colour are the windows of the building?", None),  # the building names a thing
    ("What colour is the mat the sleeping cat lies on?", None),  # the sleeping cat: which cat, not what the mat does
    ("What colour is the rug the dog is chewing?", "chewing"),
])
def test_an_ing_word_after_a_determiner_is_no_action(question: str, action: str | None) -> None:
    assert parse(question).action == action


@pytest.mark.parametrize(("question", "subject", "whole"), [
    ("Which city's skyline is shown here?", "skyline", "city"),   # the owner asked for, by name: no category
    ("Which team's flag is over the stadium?", "flag", "team"),
    ("What colour is the label can you tell?", "label", None),    # a word before a subject pronoun opens a clause
    ("What colour is the tin can?", "tin can", None),             # "can" as a noun stays in the name
    ("What is the long-sleeved boy waving?", "long-sleeved boy", None),  # a hyphened word WordNet lacks is new, not an end
    ("Which side of the road does the truck drive on?", "road", None),  # "does" (deer, to WordNet) is a verb here
    ("Where might this street have led?", "street", None),               # so is "have"
    ("How many of the dog's paws can be seen?", "paws", "dog"),          # a modal before "be" opens a clause
])
def test_an_owner_or_a_clause_ends_the_subject(question: str, subject: str, whole: str | None) -> None:
    frame = parse(question)
    assert (frame.subject, frame.whole, frame.category) == (subject, whole, None)
