"""The answer-type classifier on many phrasings, and the checks every answering role relies on."""

from __future__ import annotations

import pytest

from hydra_vr.answer_types import (AnswerSpec, against_search, asked_knowledge, asked_presence, asks_anyone, best_typed, composed_of,
                                  expected_type, is_failure_answer)


@pytest.mark.parametrize(
    ("question", "kind", "options"),
    [
        ("Is the bus red?", "yesno", ("yes", "no")),
        ("Does the woman wear glasses?", "yesno", ("yes", "no")),
        ("are there any people", "yesno", ("yes", "no")),
        ("Can you see a dog?", "yesno", ("yes", "no")),
        ("Are there either cats or dogs?", "yesno", ("yes", "no")),
        ("Does the man have a beard or not?", "yesno", ("yes", "no")),
        ("Is the man on the left or the right?", "choice", ("left", "right")),
        ("Is the person on the left side or the right side of the image?", "choice", ("left", "right")),
        ("Is the glass full or empty?", "choice", ("full", "empty")),
        ("Is the door open or closed?", "choice", ("open", "closed")),
        ("Is it big or small?", "choice", ("big", "small")),
        ("Are the lamps on or off?", "choice", ("on", "off")),
        ("Is the man in front of or behind the car?", "choice", ("front", "behind")),
        ("Is the motorcycle red, blue, or green?", "choice", ("red", "blue", "green")),
        ("Is the shirt dark blue or light blue?", "choice", ("dark blue", "light blue")),
        # a last option of two words: the noun right after the article is the subject, not part of the first option
        ("Is the van white or pale green?", "choice", ("white", "pale green")),
        ("Is the gate open or half shut?", "choice", ("open", "half shut")),
        ("Is the sign upright or upside down?", "choice", ("upright", "upside down")),
        ("Is the kettle half full or almost empty?", "choice", ("half full", "almost empty")),
        ("Is the lamp in the top left or the top right?", "choice", ("top left", "top right")),  # a place's "the"
        ("Which is bigger, the bus or the car?", "choice", ("bus", "car")),
        ("Who is taller, the man or the woman?", "choice", ("man", "woman")),
        ("Which way is the scooter facing, left or right?", "choice", ("left", "right")),
        ("Is this picture in color or black and white?", "choice", ("color", "black and white")),
        ("Is the cat sleeping or awake and alert?", "choice", ("sleeping", "awake")),
        ("Which is biggest, the bus, the car or the bike?", "choice", ("bus", "car", "bike")),
        ("What is he holding, a phone or a cup?", "choice", ("phone", "cup")),
        ("Is this a cat or a dog?", "choice", ("cat", "dog")),
        ("Is this photo taken indoors or outdoors?", "choice", ("indoors", "outdoors")),
        ("Is the second flower at the top or at the bottom?", "choice", ("top", "bottom")),
        ("Is the cat in the box or on the sofa?", "choice", ("box", "sofa")),
        # two prepositions side by side are the options, not the thing after the second one
        ("Is the kite over or under the power cable?", "choice", ("over", "under")),
        ("Is the hamster inside or outside its cage?", "choice", ("inside", "outside")),
        ("Is the red mug above or below the shelf?", "choice", ("above", "below")),
        ("Is the man on the left or on the right?", "choice", ("left", "right")),
        ("Is the light off or on?", "choice", ("off", "on")),
        ("How many people are in the picture?", "number", ()),
        ("how many stamps are there", "number", ()),
        ("What color is the van?", "color", ()),
        ("What colour are the flowers?", "color", ()),
        ("what's the color of his tie", "color", ()),
        ("Which color is the car?", "color", ()),
        ("What is the man wearing?", "open", ()),
        ("Who is in the photo?", "open", ()),
        ("Where is the cat?", "open", ()),
        ("What is written on the bus?", "open", ()),
        ("What does this bird usually eat?", "open", ()),
        ("Which animal is this?", "open", ()),
        ("", "open", ()),
    ],
)
def test_expected_type_phrasings(question, kind, options):
    spec = expected_type(question)
    assert spec.kind == kind
    assert spec.options == options


def test_dataset_choices_win_over_the_question():
    spec = expected_type("What is the man holding?", choices=["A racket", "a bat", "a ball"])
    assert spec.kind == "choice"
    assert spec.options == ("a racket", "a bat", "a ball")
    assert spec.coerce("a bat") == "a bat"
    assert spec.coerce("bats") == "bats"  # names an option (plural aside); keeps its own words
    assert spec.coerce("a frisbee") is None


@pytest.mark.parametrize(
    "text",
    ["no bus found", "Bus not found", "None", "unknown", "", "   ", "nothing", "N/A", "ImagePatch(left=0, lower=0)",
     "cannot determine", "I don't know", "Error: name 'x' is not defined", "Traceback (most recent call last)",
     "{'box': [1, 2, 3, 4]}", "there is no person in the image", "no objects detected", "not visible",
     "llm knowledge", "(LLM knowledge)", "LLM knowledge, not from the image"],
)
def test_failure_strings(text):
    assert is_failure_answer(text)


@pytest.mark.parametrize("text", ["bus", "red", "2", "yes", "no", "a man in a suit", "terrier", "pizza", "on the table"])
def test_real_answers_are_not_failures(text):
    assert not is_failure_answer(text)


def test_open_question_refuses_yes_no_and_failures():
    spec = expected_type("What is the man wearing?")
    assert spec.check("no") is not None and "open" in spec.check("no")
    assert spec.check("Yes.") is not None
    assert spec.check("no shirt found") is not None
    assert spec.check("a suit") is None
    assert spec.coerce("Answer: A suit.") == "a suit"


def test_choice_question_refuses_words_outside_the_options():
    spec = expected_type("Is the man on the left or the right?")
    assert spec.check("yes") is not None
    assert spec.check("center") is not None
    assert spec.coerce("The left one") == "left"
    assert spec.coerce("right") == "right"
    assert spec.coerce("left and right") is None


@pytest.mark.parametrize(
    ("question", "options"),
    [
        # a set phrase of the lexicon is one option, not cut at its "of" or before its last word
        ("Is the kettle in focus or out of focus?", ("in focus", "out of focus")),
        ("Is the fern in sharp focus or blurry?", ("in sharp focus", "blurry")),
        ("Is the poster upright or upside down?", ("upright", "upside down")),
        # the subject after the question's "the" is no option, though WordNet lists adjective senses of it
        ("Is the animal grazing or standing still?", ("grazing", "standing still")),
        # a verb's -ing form opens the second option: the first is its own -ing verb, not the noun it ends on
        ("Is the deer running into the woods or walking slowly?", ("running", "walking slowly")),
        ("Is the child pushing the cart or pulling it?", ("pushing", "pulling")),
        ("Is the girl climbing up the ladder or climbing down?", ("climbing up", "climbing down")),  # as many words
        # a bare path word as the second option: the first is the path word before it, not what that leads to
        ("Is the bus driving toward them or away?", ("toward", "away")),
        ("Is the swan swimming towards the bridge or away from it?", ("towards", "away")),
        # a preposition before a pronoun for the thing named first is the second option; the first is its own preposition
        ("Is the vase on top of the shelf or under it?", ("on top", "under")),
        ("Is the hamster inside the cage or outside of it?", ("inside", "outside")),
        ("Is the stool in front of the counter or behind it?", ("in front", "behind")),
        ("Is the snapshot black and white or in color?", ("black and white", "color")),  # two colours joined, as after "or"
        ("Is the jet taking off or landing?", ("taking off", "landing")),  # the verb's particle just before "or"
        # left alone: two colours, two nouns, a noun phrase on each side, different prepositions
        ("Is the scarf pink or dark green?", ("pink", "dark green")),
        ("Is that a goat or a sheep?", ("goat", "sheep")),
        ("Is it a sports car or a delivery van?", ("sports car", "delivery van")),
        ("Is the cat in the basket or on the chair?", ("basket", "chair")),
        ("Is the mug full or empty?", ("full", "empty")),
    ],
)
def test_choice_options_of_several_words(question: str, options: tuple[str, ...]) -> None:
    spec = expected_type(question)
    assert spec.kind == "choice" and spec.options == options
    assert spec.coerce(options[-1]) == options[-1]


def test_number_and_color_coercion():
    num = expected_type("How many people are there?")
    assert num.coerce("two people") == "2"
    assert num.coerce("There are 4.") == "4"
    assert num.coerce("none") == "0"
    assert num.coerce("many") is None
    col = expected_type("What color is the van?")
    assert col.coerce("Red") == "red"
    assert col.coerce("the van is mostly red with white stripes") == "red and white"
    assert col.coerce("van") is None
    assert col.coerce("no van found") is None


def test_yesno_coercion():
    spec = expected_type("Is the cat sleeping?")
    assert spec.coerce("Yes, it is.") == "yes"
    assert spec.coerce("no") == "no"
    assert spec.coerce("the cat") is None


def test_json_schema_constrains_closed_types_only():
    assert expected_type("Is it red?").json_schema()["properties"]["answer"]["enum"] == ["yes", "no"]
    assert expected_type("Is it big or small?").json_schema()["properties"]["answer"]["enum"] == ["big", "small"]
    assert expected_type("How many cats?").json_schema()["properties"]["answer"]["type"] == "integer"
    assert "red" in expected_type("What color is it?").json_schema()["properties"]["answer"]["enum"]
    assert expected_type("What is it?").json_schema() is None


def test_best_typed_takes_the_last_fitting_guess():
    spec = AnswerSpec("open")
    assert best_typed(["bus", "no", "no car found"], spec) == "bus"
    assert best_typed(["no", "unknown"], spec) is None
    assert best_typed(["3", "two"], expected_type("How many?")) == "2"


@pytest.mark.parametrize("question, answer", [
    ("Who is this pilot?", "pilot"),
    ("Who is the tall man?", "the tall man"),
    ("What is the man holding?", "man"),
    ("What plant is this?", "plant"),
    ("What is the woman in the red dress doing?", "the woman in red dress"),
    ("Where are the coins?", "coins"),
])
def test_an_open_answer_that_only_repeats_the_question_is_refused(question, answer):
    spec = expected_type(question)
    assert spec.coerce(answer) is None
    assert "only repeats what the question is about" in spec.check(answer)
    assert best_typed(["eileen collins", answer], spec) == "eileen collins"  # an earlier real answer wins


@pytest.mark.parametrize("question, answer", [
    ("Who is this pilot?", "Amelia Earhart"),
    ("What is the man holding?", "a phone"),
    ("What plant is this?", "fern"),
    ("Where is the cat?", "on the sofa"),
    ("What does the stop sign say?", "stop"),  # text read off the photo may repeat the question
    ("What is written on the bus?", "bus"),
])
def test_answers_that_say_something_new_are_kept(question, answer):
    assert expected_type(question).fits(answer)


def test_closed_types_do_not_look_at_the_question_words():
    assert expected_type("Is the man holding a phone?").coerce("no") == "no"
    assert expected_type("Is the jug full or empty?").coerce("empty") == "empty"
    assert expected_type("What color is the red bus?").coerce("red") == "red"


def test_a_bare_number_does_not_answer_who_or_where():
    who = expected_type("Who is the tall man?")
    assert who.coerce("2") is None and "is a bare number, but the question asks who" in who.check("2")
    assert expected_type("Where is the fork?").coerce("1") is None
    assert expected_type("What number is on the bus?").coerce("15") == "15"  # other open questions may want one
    assert who.coerce("Zinedine Zidane") == "zinedine zidane"


@pytest.mark.parametrize("question", ["What is the red shape?", "Which animal is on the sofa?",
                                      "What is the man holding?", "what are the blue shapes?",
                                      # a measure word as a place: "in the distance", "on the plate", "in the room"
                                      "What are the hills in the distance?", "What is on the plate?",
                                      "Which animal sleeps in the room?"])
def test_a_bare_number_does_not_name_a_thing(question):
    # a program that returned str(len(find("red"))) for "what is the red shape?" answered "1"
    spec = expected_type(question)
    assert spec.coerce("1") is None and "not how many" in spec.check("1")
    assert spec.coerce("triangle") == "triangle"


@pytest.mark.parametrize("question", ["What year is on the coin?", "What time does the clock show?",
                                      "What is the route number of the bus?", "What does the sign say?",
                                      "What is written on the door?", "How old is the building?",
                                      "What is the price of the coffee?", "What floor is the office on?",
                                      "Which gate does the flight leave from?", "What is the speed limit?",
                                      "What distance does the road sign show?", "What number is on the door?",
                                      "What is the number on the jersey?"])
def test_a_number_still_answers_what_asks_for_one(question):
    assert expected_type(question).coerce("1969") == "1969"


@pytest.mark.parametrize(
    ("question", "answer", "finds", "refused"),
    [
        ("How many wheels does the bicycle have?", "1", [("bicycle", 1)], True),
        ("How many rows of stamps are there?", "24", [("stamp", 24)], True),
        ("How many poles stand around the tent?", "1", [("tent", 1)], True),
        ("How many windows does the red bus have?", "2", [("bus", 2)], True),
        # the counted thing was looked for too: its count may be the answer
        ("How many wheels does the bicycle have?", "2", [("bicycle", 1), ("wheel", 2)], False),
        ("How many wheels does the bicycle have?", "1", [("bicycle", 1), ("wheels", 0)], False),
        # a name the question does not use (men -> person) is no other thing
        ("How many men are in the picture?", "2", [("person", 2)], False),
        ("How many stamps are in the top row?", "24", [("stamp", 24)], False),
        ("How many red cars are there?", "3", [("car", 3)], False),
        # the number is not that find's count: it came from elsewhere
        ("How many wheels does the bicycle have?", "2", [("bicycle", 1)], False),
        ("What is on the bicycle?", "1", [("bicycle", 1)], False),
        ("How many wheels does the bicycle have?", "two", [("bicycle", 1)], False),
    ],
)
def test_a_count_of_another_thing_the_question_names_is_refused(question, answer, finds, refused):
    from hydra_vr.answer_types import counted_thing, miscount

    why = miscount(answer, counted_thing(question), finds)
    assert (why is not None) == refused, why
    if refused:
        assert why.startswith(f"{answer!r} is how many find({finds[-1][0]!r}) returned, but the question counts")


_OCR_DUMP = "IMOONE M15OL/SEUILLA MADRID EMT Un minihus electrico sres plan prndvete MEMID ST cero emisiones"


@pytest.mark.parametrize(
    "question, reads",
    [
        ("What is written on the note?", True),
        ("What words are written in big red letters on the side of the truck?", True),
        ("What does the sign say?", True),
        ("What is the title at the top of the poster?", True),
        ("What does the label on the bottle read?", True),
        ("What language is written on the van?", False),  # a language, not the text
        ("What destination is shown on the sign above the door?", False),
        ("Which company builds this plane?", False),
        ("What is the woman holding?", False),
    ],
)
def test_questions_that_ask_to_read_text_out(question, reads):
    from hydra_vr.answer_types import asks_to_read

    assert asks_to_read(question) is reads
    spec = expected_type(question)
    # a long text answers only a question that asks to read it (an OCR dump named no language)
    assert (spec.coerce(_OCR_DUMP) is not None) is reads
    if not reads:
        why = spec.check(_OCR_DUMP)
        assert "long text" in why and "one to three words" in why
        assert spec.coerce("spanish") == "spanish"  # a short answer to the same question fits


@pytest.mark.parametrize("question, answer, fits", [
    ("What is the old man wearing over his sweater?", "white", False),
    ("What is he wearing on his head?", "red and white", False),
    ("What is the man dressed in?", "Black.", False),
    ("What is the old man wearing over his sweater?", "black coat", True),
    ("What is the girl wearing?", "orange spacesuit", True),
    ("What is the girl wearing?", "uniform", True),
    ("What is the man holding?", "red", True),  # not a question about clothing: a colour may name a thing
    ("What color is his shirt?", "white", True),  # a colour question
])
def test_a_bare_colour_does_not_say_what_someone_wears(question, answer, fits):
    spec = expected_type(question)
    assert spec.fits(answer) is fits
    if not fits:
        assert "only a colour" in spec.check(answer) and spec.coerce(answer) is None


@pytest.mark.parametrize("question, phrase, named", [
    ("Is this soup usually served hot or cold?", "this soup", "Is this soup usually served hot or cold? (This soup is a X.)"),
    ("What is the white foam on top of this beer called?", "this beer",
     "What is the white foam on top of this beer called? (This beer is a X.)"),
    ("What does this bird usually eat?", "this bird", "What does this bird usually eat? (This bird is a X.)"),
    ("What sound does this bird make?", "this bird", "What sound does this bird make? (This bird is a X.)"),
    ("What is this coat pattern called?", "this coat pattern", "What is this coat pattern called? (This coat pattern is a X.)"),
    ("Which company builds this plane?", "this plane", "Which company builds this plane? (This plane is a X.)"),
    ("Where do these animals usually live?", "these animals", "Where do these animals usually live? (These animals are X.)"),
    ("What is this dish made of?", "this dish", "What is this dish made of? (This dish is a X.)"),
    ("what field is this man famous for", "this man", "what field is this man famous for (This man is a X.)"),
    # a word for a kind, a portion or a group and "of": the thing that follows is the head
    ("Which breed group is this kind of terrier usually put in?", "this kind of terrier",
     "Which breed group is this kind of terrier usually put in? (This kind of terrier is a X.)"),
    ("What is this slice of cheese usually called?", "this slice of cheese",
     "What is this slice of cheese usually called? (This slice of cheese is a X.)"),
])
def test_asked_knowledge_names_the_thing_the_question_points_at(question, phrase, named):
    asked = asked_knowledge(question)
    assert asked is not None and asked.phrase == phrase and asked.naming("X") == named
    assert asked.head == phrase.split()[-1]


@pytest.mark.parametrize("question", [
    "What color is this drink?",  # the pixels, not knowledge
    "How many cats are in this picture?",
    "Is the van electric?",  # no "this": nothing pointed at
    "In which city was this picture taken?",  # the picture is no thing to name
    "What is this called?",
    "What is the name of this ship?",  # no knowledge cue
])
def test_asked_knowledge_leaves_other_questions(question):
    assert asked_knowledge(question) is None


@pytest.mark.parametrize("question", ["What is this used for?", "What are these used for?"])
def test_a_pronoun_standing_alone_names_no_head(question):
    # the verb after it ("used") is no noun: the tools name the thing pictured, and the name follows the pronoun
    asked = asked_knowledge(question)
    assert asked is not None and asked.head is None and asked.phrase in ("this", "these")
    assert asked.naming("kettle").endswith("(This is a kettle.)" if asked.phrase == "this" else "(These are kettle.)")


def test_an_answer_glued_from_tool_replies_around_the_questions_words_is_the_replies():
    q = "What are the two women wearing?"
    assert composed_of("Two women wearingsuitsuit", q, ["suit", "suit"]) == "suit"
    assert composed_of("suit academic gown", q, ["suit", "academic gown"]) == "suit and academic gown"
    # kinds of one thing (compounds with one head) are named by it; different heads stay listed
    assert composed_of("paper cup and coffee cup", "What do the two guests carry?", ["paper cup", "coffee cup"]) == "cup"
    assert composed_of("sun hat and hat", "What do the two guests carry?", ["sun hat", "hat"]) == "hat"
    assert composed_of("The man is wearing a suit.", "What is the man wearing?", ["suit"]) == "suit"
    assert composed_of("monastery from china", "What country is this roof style from?", ["monastery", "china"]) == "monastery and china"
    # one reply, no reply in it, or words of its own: left alone
    assert composed_of("suit", q, ["suit"]) is None
    assert composed_of("a tuxedo", q, ["suit"]) is None
    assert composed_of("3 dogs", "How many dogs are there?", ["dogs"]) is None
    assert composed_of("a red car", "What is parked on the street?", ["car"]) is None
    assert composed_of("two women wearingsuitsuit", "", ["suit"]) is None


def test_is_anyone_questions_are_told_apart():
    for q in ("Is anyone riding the horse?", "Is there anyone in the car?", "Are any people walking?",
              "Does anybody hold an umbrella?", "is someone sitting on the bench"):
        assert asks_anyone(q), q
    for q in ("Is the man riding the motorcycle?", "Who is riding the motorcycle?", "Is there a dog?", "Is anything red?"):
        assert not asks_anyone(q), q


@pytest.mark.parametrize(
    ("answer", "question", "finds", "right"),
    [
        ("no", "is there not a red shape?", [("red", 0)], "yes"),
        ("yes", "is there not a blue shape in the image?", [("blue", 1), ("blue", 1)], "no"),
        ("no", "is no yellow shape present?", [("yellow", 0)], "yes"),
        ("yes", "is no black shape present?", [("black", 1)], "no"),
        ("no", "Does the image not contain a dog?", [("cat", 2), ("dog", 0)], "yes"),
    ],
)
def test_a_negated_presence_answer_against_the_programs_find_is_refused(answer, question, finds, right):
    reason = against_search(answer, asked_presence(question), finds)
    assert reason is not None and reason.endswith(f"is {right}")
    assert against_search(right, asked_presence(question), finds) is None


@pytest.mark.parametrize(
    ("answer", "question", "finds"),
    [
        ("yes", "is there not a red shape?", [("shape", 1)]),  # a shape, not a red one: says nothing
        ("yes", "Is there not a black cat?", [("cat", 1)]),
        ("yes", "Is there no dog on the sofa?", [("dog", 1)]),  # placed: not one whole-image find
        ("yes", "Is there a dog?", [("dog", 0)]),  # not negated: a simple_query after the find may know better
        ("no", "Is there not a dog?", []),
    ],
)
def test_a_negated_presence_answer_stands_where_no_find_settles_it(answer, question, finds):
    assert against_search(answer, asked_presence(question), finds) is None


def test_a_count_spec_with_a_least_refuses_what_is_under_it():
    import dataclasses
    import json

    spec = dataclasses.replace(AnswerSpec("number"), least=1)
    assert spec.coerce("0") is None and spec.coerce("none") is None and spec.coerce("four") == "4"
    assert "under 1" in spec.check("zero") and spec.json_schema()["properties"]["answer"]["minimum"] == 1
    assert 0 not in spec.json_schema()["properties"]["answer"]["enum"]  # a grammar that ignores "minimum" keeps it too
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # the embedded backend's own converter

    assert "\"0\"" not in json_schema_to_gbnf(json.dumps(spec.json_schema()))
    assert AnswerSpec("number").coerce("zero") == "0"  # by default a 0 is a count like any other


@pytest.mark.parametrize("question, what", [
    ("How many geese swim near the dock?", ("geese",)),        # a verb after a plural noun ends the phrase
    ("How many kites fly above the beach?", ("kite",)),
    ("How many coffee mugs hang on the rack?", ("coffee", "mug")),  # a compound noun's singular modifier stays
    ("How many bus stops are on this street?", ("bus", "stop")),
    ("How many deer graze at the edge of the wood?", ("deer",)),  # a plural like its singular: a base-form verb
    ("How many fish tanks line the wall?", ("fish", "tank")),     # a compound noun stays whole
])
def test_the_counted_phrase_ends_at_its_verb(question, what):
    from hydra_vr.answer_types import counted_thing

    assert counted_thing(question).what == what
