"""ask_typed: a reply that does not fit is re-asked for ranked guesses, kept off what was refused."""

from __future__ import annotations

import json

from hydra_vr.answer_types import expected_type
from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.llm.typed import ask_typed

ASK = [ChatMessage("user", "In which city was this picture taken?")]
CITY = expected_type("In which city was this picture taken?")


def test_unknown_is_reasked_for_three_guesses_and_the_first_answer_is_taken():
    llm = ScriptedChat([json.dumps({"answer": "unknown"}), json.dumps({"guesses": ["not sure", "madrid", "seville"]})])
    reply = ask_typed(llm, ASK, CITY, max_tokens=24)
    assert reply.answer == "madrid" and reply.tries == 2
    second = llm.calls[1]
    assert second.json_schema["properties"]["guesses"]["minItems"] == 3
    assert second.max_tokens == 72  # room for three answers
    assert "best guesses" in second.messages[-1].content and "reports a failure" in second.messages[-1].content


def test_guesses_cut_at_max_tokens_keep_the_finished_ones():
    llm = ScriptedChat([json.dumps({"answer": "none"}), '{"guesses": ["madrid", "barcel'])
    assert ask_typed(llm, ASK, CITY).answer == "madrid"
    # nothing finished: no answer, never the JSON fragment
    llm = ScriptedChat([json.dumps({"answer": "none"}), '{"guesses": ["madr'])
    reply = ask_typed(llm, ASK, CITY)
    assert reply.answer is None and "guesses" not in reply.raw


def test_closed_types_guess_within_their_schema():
    colour = expected_type("What color is the van?")
    llm = ScriptedChat([json.dumps({"answer": "unknown"}), json.dumps({"guesses": ["blue", "white", "red"]})])
    assert ask_typed(llm, [ChatMessage("user", "What color is the van?")], colour).answer == "blue"
    assert "enum" in llm.calls[1].json_schema["properties"]["guesses"]["items"]
    # retries=0: the one reply, refused, is returned as said for the caller to refuse
    llm = ScriptedChat([json.dumps({"answer": "unknown"})])
    reply = ask_typed(llm, ASK, CITY, retries=0)
    assert reply.answer is None and reply.raw == "unknown" and len(llm.calls) == 1


def test_an_open_misfit_is_reasked_for_guesses_kept_off_yes_no_and_what_was_refused():
    held = expected_type("What is the man holding?")
    llm = ScriptedChat([json.dumps({"answer": "yes"}), json.dumps({"guesses": ["no", "umbrella", "bag"]})])
    assert ask_typed(llm, [ChatMessage("user", "What is the man holding?")], held).answer == "umbrella"
    item = llm.calls[1].json_schema["properties"]["guesses"]["items"]
    assert {"yes", "no", "unknown"} <= set(item["not"]["enum"]) and llm.calls[1].max_tokens == 72
    # the question's subject said again is refused again; its words are kept out of the guesses
    branch = expected_type("Which branch of the military is his uniform from?")
    llm = ScriptedChat([json.dumps({"answer": "military uniform"}), json.dumps({"guesses": ["military", "navy", "army"]})])
    reply = ask_typed(llm, [ChatMessage("user", branch.question)], branch)
    assert reply.answer == "navy" and "repeats" in llm.calls[1].messages[-1].content
    assert {"military", "uniform"} <= set(llm.calls[1].json_schema["properties"]["guesses"]["items"]["not"]["enum"])
    # nothing fits after the guesses: no answer, the caller refuses what was said
    llm = ScriptedChat([json.dumps({"answer": "yes"}), json.dumps({"guesses": ["no", "yes", "none"]})])
    assert ask_typed(llm, [ChatMessage("user", "What is the man holding?")], held).answer is None


def test_a_city_question_guesses_among_major_cities_once_its_answer_named_none():
    llm = ScriptedChat([json.dumps({"answer": "downtown"}), json.dumps({"guesses": ["madrid", "paris", "rome"]})])
    assert ask_typed(llm, ASK, CITY).answer == "madrid"
    first, item = llm.calls[0].json_schema, llm.calls[1].json_schema["properties"]["guesses"]["items"]
    assert "enum" not in json.dumps(first)  # the first answer is free: any city of 100k is checked, not enumerated
    assert {"madrid", "beijing", "new york city", "tokyo"} <= set(item["enum"]) and "downtown" not in item["enum"]
    assert "seville" not in item["enum"]  # 690k people, no capital: a free answer only
    assert 400 < len(item["enum"]) < 800  # few enough for a llama.cpp grammar


def test_shunned_words_keep_a_long_refused_text_s_words_and_closed_types_keep_their_schema():
    language = expected_type("What language is written on the van?")
    dump = "cero emisiones un minibus electrico sol sevilla plan de movilidad"  # an OCR dump refused for its length
    shunned = language.shunned(["no", dump])
    assert {"yes", "no", "unknown"} <= set(shunned) and "sevilla" not in shunned
    assert expected_type("What color is the van?").guess_schema(["unknown"])["enum"]  # the colour enum, no "not"
    assert "yes" not in expected_type("How many people?").shunned()  # only an open question keeps off yes/no


def test_a_reply_cut_at_max_tokens_gives_its_fields_not_its_json_text():
    from hydra_vr.agent.roles import PromptSet, Summarizer
    from hydra_vr.llm.typed import parse_json_reply

    cut = '{"decision": "answer", "answer": "open daily from nine to fi'
    assert parse_json_reply(cut) == {"decision": "answer", "answer": "open daily from nine to fi"}
    assert parse_json_reply(cut, repair=False) == {}
    assert parse_json_reply("no object here") == {}
    sign = "What does the sign on the shop door say?"
    summarizer = Summarizer(ScriptedChat([cut]), PromptSet.for_task("vqa"))
    decision = summarizer.decide(sign, "Step 1: read_text: OPEN DAILY FROM NINE TO FIVE")
    assert decision.kind == "answer" and "{" not in decision.answer and decision.answer.startswith("open daily")
    # a cut decision alone still reads as the decision it began
    assert Summarizer(ScriptedChat(['{"decision": "contin']), PromptSet.for_task("vqa")).decide(sign, "x").kind == "continue"
