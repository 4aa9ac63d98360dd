"""ask_typed: a failure report is re-asked for ranked guesses; other misfits for one answer."""

from __future__ import annotations

import json

from hydra_vr.answer_types import expected_type
from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.scripted import ScriptedChat
from hydra_vr.llm.typed import ask_typed

ASK = [ChatMessage("user", "In which city was this photo taken?")]
CITY = expected_type("In which city was this photo taken?")


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


def test_closed_types_guess_within_their_schema_and_other_misfits_ask_for_one_answer():
    colour = expected_type("What color is the bus?")
    llm = ScriptedChat([json.dumps({"answer": "unknown"}), json.dumps({"guesses": ["blue", "white", "red"]})])
    assert ask_typed(llm, [ChatMessage("user", "What color is the bus?")], colour).answer == "blue"
    assert "enum" in llm.calls[1].json_schema["properties"]["guesses"]["items"]
    held = expected_type("What is the man holding?")
    llm = ScriptedChat([json.dumps({"answer": "yes"}), json.dumps({"answer": "umbrella"})])
    assert ask_typed(llm, [ChatMessage("user", "What is the man holding?")], held).answer == "umbrella"
    assert "guesses" not in json.dumps(llm.calls[1].json_schema) and llm.calls[1].max_tokens == 24
    # a city question's misfit asks for guesses: the names are only checked, so more of them help
    llm = ScriptedChat([json.dumps({"answer": "yes"}), json.dumps({"guesses": ["downtown", "madrid", "paris"]})])
    assert ask_typed(llm, ASK, CITY).answer == "madrid" and "guesses" in json.dumps(llm.calls[1].json_schema)
    # retries=0: the one reply, refused, is returned as said for the caller to refuse
    llm = ScriptedChat([json.dumps({"answer": "unknown"})])
    reply = ask_typed(llm, ASK, CITY, retries=0)
    assert reply.answer is None and reply.raw == "unknown" and len(llm.calls) == 1
