"""Questions that ask for a country or a city are answered with the name of one (hydra_vr/gazetteer.py)."""

from __future__ import annotations

import json

import pytest

from hydra_vr import gazetteer
from hydra_vr.answer_types import clean, expected_type
from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.llm.typed import answer_schema, ask_typed


@pytest.mark.parametrize(
    "question, names",
    [
        ("What country is this roof style from?", "country"),
        ("Which country's flag is on the pole?", "country"),
        ("Which country's flag is beside the door?", "country"),
        ("what nation is this?", "country"),
        ("What is the name of this country?", "country"),
        ("In which city was this picture taken?", "city"),
        ("In which city is this square?", "city"),
        ("What city is this?", "city"),
        ("Which town's square is this?", "city"),
        ("What is the name of the city?", "city"),
        ("Is this in China?", None),  # yes/no
        ("Is this city Madrid or Paris?", None),  # named options
        ("What language is written on the van?", None),
        ("What is the building made of?", None),
        ("Which company builds this plane?", None),
    ],
)
def test_questions_that_ask_for_a_country_or_a_city(question, names):
    assert expected_type(question).names == names


def test_a_country_answer_names_a_country_in_its_own_words():
    spec = expected_type("What country is this roof style from?")
    assert spec.coerce("China") == "china"
    assert spec.coerce("the United States") == "united states"
    assert spec.coerce("USA") == "usa" and spec.coerce("England") == "england"
    assert spec.coerce("Korea, Republic of") == "korea, republic of"
    for wrong in ("monastery from monastery", "red", "palace", "chinese style", "yes", "in and out", "i can see"):
        assert spec.coerce(wrong) is None, wrong
    # ISO codes that are English words ("and": Andorra, "can": Canada) name a country only as the whole answer
    assert spec.coerce("monastery and china") == "china" and spec.coerce("AND") == "and" and spec.coerce("PER") == "per"
    assert "not the name of a country" in spec.check("monastery from monastery")
    # the prompt's sentence stays the open question's: "answer with the name of a country" turned the 1.5B
    # from the United States to Canada for the astronaut photo's flag; the enum keeps it to a country
    assert spec.describe() == expected_type("What is this?").describe()
    # constrained by the schema: ISO 3166's names as written, common names where ISO has one (lower-case names
    # as a grammar turned the 1.5B to "canada" for the US flag)
    enum = spec.json_schema()["properties"]["answer"]["enum"]
    assert len(enum) == 249 + 14 and {"China", "United States", "USA", "Spain", "Iran", "South Korea"} <= set(enum)
    assert all(spec.coerce(name) == clean(name) for name in enum)  # every offered name is taken


def test_a_city_answer_is_checked_against_geonames():
    spec = expected_type("In which city is this square?")
    assert spec.json_schema() is None  # 6k names: checked, not a grammar
    for city in ("madrid", "Beijing", "seville", "sevilla", "peking", "new york", "the city of paris", "munich"):
        assert spec.coerce(city) is not None, city
    assert spec.coerce("the city of paris") == "paris"
    for wrong in ("monastery", "palace", "downtown", "china", "bus station", "yes", "police", "temple"):
        assert spec.coerce(wrong) is None, wrong
    assert "not the name of a city" in spec.check("monastery")
    assert len(gazetteer.cities()) > 6000 and "the" not in gazetteer.cities()  # no airport code "THE"
    # plain words that name towns under 100,000 people (Police, Poland; Temple, Texas) are no city answer
    assert "police" not in gazetteer.cities() and "temple" not in gazetteer.cities()


def test_a_reply_that_names_no_city_is_reasked_with_the_reason():
    spec = expected_type("In which city is this square?")
    llm = ScriptedChat([json.dumps({"answer": "monastery"}), json.dumps({"answer": "beijing"})])
    reply = ask_typed(llm, [ChatMessage("user", "In which city is this square?")], spec)
    assert reply.answer == "beijing" and reply.tries == 2
    assert "'monastery' is not the name of a city" in llm.calls[1].messages[-1].content
    # asked again, the 1.5B said "city" again for the pagoda's city: a city re-ask asks for ranked guesses
    llm = ScriptedChat([json.dumps({"answer": "city"}), json.dumps({"guesses": ["town", "beijing", "paris"]})])
    reply = ask_typed(llm, [ChatMessage("user", "In which city is this square?")], spec)
    assert reply.answer == "beijing" and "guesses" in llm.calls[1].json_schema["properties"]
    # a country question sends its names as the schema's enum (a llama.cpp grammar)
    country = expected_type("What country is this roof style from?")
    llm = ScriptedChat([json.dumps({"answer": "china"})])
    assert ask_typed(llm, [ChatMessage("user", "What country?")], country).answer == "china"
    assert "China" in llm.calls[0].json_schema["properties"]["answer"]["enum"]
    assert answer_schema(country)["properties"]["answer"]["enum"] == list(gazetteer.country_names())
