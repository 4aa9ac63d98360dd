"""Every answering role is held to the question's answer type (scripted LLM, real sandbox, real vision tools)."""

from __future__ import annotations

import json

import pytest

from hydra_vr.agent.loop import HydraAgent
from hydra_vr.config import AgentConfig
from hydra_vr.sandbox import Sandbox
from tests.scripted_roles import RoleQueues

MARKERS = {
    "planner": "You plan the next step",
    "reasoner": "You write short Python programs",
    "summarizer": "You decide whether",
    "final": "The step limit was reached",
    "describe": "You answer questions about an image you cannot see",
    "knowledge": "Answer the question from general knowledge",
}


class Script(RoleQueues):
    def __init__(self, **queues: list[str]) -> None:
        super().__init__(MARKERS, **queues)


def plan(*instructions: str) -> str:
    return json.dumps({"instructions": [{"instruction": s, "probability": 1.0 / len(instructions)} for s in instructions], "answer": ""})


def code(body: str) -> str:
    return f"```python\n{body}\n```"


def decide(decision: str, answer: str = "") -> str:
    return json.dumps({"decision": decision, "answer": answer})


def ans(text: str) -> str:
    return json.dumps({"answer": text})


@pytest.fixture(scope="module")
def toolbox_with_llm():
    """The real embedded tools, whose LLM (for simple_query's describe backend) is swapped per test."""
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_toolbox

    cfg = load_config("default")
    holder: dict = {}
    tb = build_toolbox(cfg, llm=lambda: holder["llm"])
    tb.holder = holder
    return tb


@pytest.fixture(scope="module")
def sandbox(toolbox_with_llm):
    with Sandbox(toolbox_with_llm, timeout_s=20) as sb:
        yield sb


def agent_for(script: Script, toolbox, sandbox, **cfg) -> HydraAgent:
    toolbox.holder["llm"] = script.chat
    return HydraAgent(AgentConfig(**cfg), script.chat, toolbox, sandbox)


def test_failure_string_is_never_final_and_the_planner_is_told(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("Find the sign and read it"), plan("Ask the whole image what the sign says")],
        # a name the detector can look for (a blind one is retried inside the step, see below)
        reasoner=[code('signs = ImagePatch(image).find("giraffe")\nfinal_answer = signs[0].simple_query("text?") if signs else "no sign found"'),
                  code('final_answer = "stop"')],
        # the summarizer first tries to pass the failure string off as the answer, twice
        summarizer=[decide("answer", "no sign found"), decide("answer", "no sign found"), decide("answer", "stop")],
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=3).run(str(photo("bus")), "What does the sign say?")
    assert result.ok, result.error
    assert result.answer == "stop"
    first = result.steps[0]
    assert first.guess is None and first.decision == "continue"
    planner_2 = script.messages("planner")[1][-1].content
    assert "Note:" in planner_2 and "failure" in planner_2  # the next plan sees why
    # the re-ask carried the reason
    assert "does not fit" in script.messages("summarizer")[1][-1].content


def test_open_question_refuses_yes_no_from_the_summarizer(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("Find the person and ask what he wears")],
        reasoner=[code('final_answer = "jacket"')],
        summarizer=[decide("answer", "no"), decide("answer", "Jacket.")],
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=2).run(str(photo("zidane")), "What is the man on the left wearing?")
    assert result.answer == "jacket" and result.answer_type == "open"
    assert "open" in script.messages("summarizer")[1][-1].content


def test_choice_question_constrains_the_summarizer_schema(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("Find the people and compare their centres")],
        reasoner=[code('final_answer = "left"')],
        summarizer=[decide("answer", "left")],
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=2).run(str(photo("zidane")), "Is the man with the tie on the left or the right?")
    assert result.answer == "left" and result.answer_type == "choice"
    assert script.schema("summarizer")["properties"]["answer"]["enum"] == ["left", "right"]


def test_program_answer_of_the_wrong_type_is_not_a_guess(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("Check whether the bus is red")],
        reasoner=[code('final_answer = "yes"')],
    )
    # one_step: the program's answer is final, but "yes" does not fit a colour question ->
    # no typed guess -> simple_query on the whole image (describe backend, constrained to colours)
    script.queues["describe"].extend([ans("blue")])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="one_step").run(str(photo("bus")), "What color is that bus?")
    assert result.answer == "blue"
    assert result.answer_source == "fallback simple_query"
    assert result.steps[0].guess is None and result.steps[-1].instruction.startswith("(fallback)")
    assert "blue" in script.schema("describe")["properties"]["answer"]["enum"]


def test_step_limit_falls_back_to_best_typed_guess_then_simple_query(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("Count the people"), plan("Count the faces")],
        reasoner=[code('people = ImagePatch(image).find("person")\nfinal_answer = "4"'), code('final_answer = "not found"')],
        summarizer=[decide("continue"), decide("continue")],
        final=[ans("many"), ans("lots")],  # never a number: refused twice
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=2).run(str(photo("bus")), "How many people are there?")
    assert result.answer == "4" and result.answer_source == "typed guess"
    # the final-answer role was constrained to an integer
    assert script.schema("final")["properties"]["answer"]["type"] == "integer"


def test_vipergpt_program_without_final_answer_falls_back(toolbox_with_llm, sandbox, photo):
    script = Script(reasoner=[code('patch = ImagePatch(image)\nbuses = patch.find("bus")')],
                    describe=[ans("bus")])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="vipergpt").run(str(photo("bus")), "What vehicle is this?")
    assert result.answer == "bus" and result.answer_source == "fallback simple_query"
    assert "no final_answer" in result.steps[0].feedback


def test_the_last_resort_answers_why_with_the_reason_clause_of_a_sentence(toolbox_with_llm, sandbox, tmp_path):
    from PIL import Image

    path = tmp_path / "grey.png"
    Image.new("RGB", (96, 64), (128, 128, 128)).save(path)
    sentence = "The field lies empty because the match was called off."
    script = Script(reasoner=[code('patch = ImagePatch(image)')], describe=[ans(sentence), ans(sentence)])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="vipergpt").run(str(path), "Why is the field empty?")
    assert result.answer == "because the match was called off" and result.answer_source == "fallback simple_query"
    assert [c["check"] for c in result.checks] == ["reason_clause"]


COUNT_TOWERS = code('towers = ImagePatch(image).find("tower")\nfinal_answer = len(towers)')


def test_a_zero_from_a_name_the_detector_cannot_look_for_is_not_an_answer(toolbox_with_llm, sandbox, photo):
    # NanoDet has no class for towers, nor is a tower an outline to look for: find() is empty for that
    # reason, so 0 says nothing about the photo
    script = Script(
        planner=[plan("Find the towers and count them"), plan("Ask the whole image how many towers there are")],
        reasoner=[COUNT_TOWERS, code('final_answer = ImagePatch(image).simple_query("How many towers are there?")')],
        summarizer=[decide("answer", "0"), decide("answer", "12")],
        describe=[ans("12")],
    )
    # no retries inside the step: the refusal reaches the next plan
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=3, max_code_retries=0).run(
        str(photo("rocket")), "How many towers are there?")
    assert result.answer == "12" and result.answer_source == "summarizer"
    first = result.steps[0]
    assert first.guess is None and first.decision == "continue"
    assert "cannot look for that name" in first.extra["note"]
    assert "cannot look for that name" in script.messages("planner")[1][-1].content  # the next plan is told


def test_vipergpt_zero_from_a_blind_find_falls_back_to_the_whole_image(toolbox_with_llm, sandbox, photo):
    script = Script(reasoner=[COUNT_TOWERS], describe=[ans("9")])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="vipergpt", max_code_retries=0).run(
        str(photo("rocket")), "How many towers are there?")
    assert result.answer == "9" and result.answer_source == "fallback simple_query"
    assert "rests on find('tower')" in result.steps[0].feedback


def test_a_blind_find_is_retried_inside_the_step_then_the_fallback_runs(toolbox_with_llm, sandbox, photo):
    # The 1.5B reasoner wrote find("triangle") five steps in a row on easy-VQA. Now the step itself is
    # told why the answer was refused; a rewrite that calls the same find again is not run, and the
    # step's fallback program (simple_query on the whole image, no find) answers in the first step.
    script = Script(
        planner=[plan("Find the towers and count them")],
        reasoner=[COUNT_TOWERS, COUNT_TOWERS.replace("len(towers)", "len(towers) if towers else 0")],
        summarizer=[decide("answer", "12")],
        describe=[ans("12")],
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=3).run(str(photo("rocket")), "How many towers are there?")
    assert result.answer == "12" and len(result.steps) == 1
    attempts = result.steps[0].attempts
    assert [a.error_kind for a in attempts] == ["blind_find", "blind_find", None] and attempts[-1].fallback
    retry = script.messages("reasoner")[1][-1].content
    assert "find('tower') always comes back empty" in retry and "0 rests on that empty result" in retry
    assert len(script.messages("reasoner")) == 2 and len(script.messages("describe")) == 1


def test_a_yes_to_a_negated_question_from_a_blind_find_is_not_an_answer(toolbox_with_llm, sandbox, photo):
    # HierVA's workers on easy-VQA: "is there not a flag?" -> find("flag") is empty because the
    # detector has no such class -> "yes". As unfounded as a 0 or a no: the whole-image fallback answers.
    negated = code('flags = ImagePatch(image).find("flag")\nfinal_answer = "yes" if not flags else "no"')
    script = Script(reasoner=[negated], describe=[ans("no")])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="vipergpt", max_code_retries=0).run(
        str(photo("coins")), "Is there not a flag?")
    assert result.answer == "no" and result.answer_source == "fallback simple_query"
    assert "'yes' rests on find('flag')" in result.steps[0].feedback


def test_a_zero_for_a_class_the_detector_knows_stays_an_answer(toolbox_with_llm, sandbox, photo):
    script = Script(reasoner=[code('final_answer = len(ImagePatch(image).find("dog"))')])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="vipergpt").run(str(photo("coins")), "How many dogs are there?")
    assert result.answer == "0" and result.answer_source == "program"


def test_repeated_program_is_refused_and_rewritten(toolbox_with_llm, sandbox, photo):
    same = code('final_answer = "no bus found"')
    script = Script(
        planner=[plan("Find the bus"), plan("Find the bus again differently")],
        reasoner=[same, same, code('final_answer = "bus"')],
        summarizer=[decide("continue"), decide("answer", "bus")],
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=3).run(str(photo("bus")), "What vehicle is in the picture?")
    second = result.steps[1]
    assert second.attempts[0].error_kind == "repeat"
    assert "same as step 1" in script.messages("reasoner")[2][-1].content
    assert result.answer == "bus"


def test_describe_backend_reasks_an_open_question_answered_no(toolbox_with_llm, photo):
    from hydra_vr.api import bind_toolbox

    script = Script(describe=[ans("no"), ans("cat")])
    toolbox_with_llm.holder["llm"] = script.chat
    Patch = bind_toolbox(toolbox_with_llm)
    # (no category asked: "which animal?" is answered from the classifier's labels, with no LLM call)
    assert Patch(str(photo("chelsea"))).simple_query("What is lying here?") == "cat"
    retry = script.messages("describe")[1]
    assert "the question is open" in retry[-1].content
    # the question's answer type is stated, and the findings about what it names come first
    first_user = script.messages("describe")[0][-1].content
    assert "Expected answer: an open question" in first_user
    # few-shot examples travel as earlier chat turns
    assert sum(m.role == "assistant" for m in script.messages("describe")[0]) >= 3


def test_describe_reasks_unknown_for_ranked_guesses(toolbox_with_llm, photo):
    # "unknown" twice left vipergpt with no answer at all; the re-ask now asks for a ranked list of
    # guesses under a schema of that list, and takes the first that is an answer
    from hydra_vr.api import bind_toolbox

    guesses = json.dumps({"guesses": ["unknown", "madrid", "seville"]})
    script = Script(describe=[ans("unknown"), guesses])
    toolbox_with_llm.holder["llm"] = script.chat
    Patch = bind_toolbox(toolbox_with_llm)
    assert Patch(str(photo("bus"))).simple_query("In which city was this picture taken?") == "madrid"
    retry = script.messages("describe")[1][-1].content
    assert "reports a failure" in retry and "best guesses" in retry
    schema = script.calls("describe")[1].json_schema
    assert schema["properties"]["guesses"]["maxItems"] == 3 and schema["required"] == ["guesses"]
    # a list of nothing but failures is still no answer: the reply is returned for the loop to refuse
    script = Script(describe=[ans("unknown"), json.dumps({"guesses": ["unknown", "none", "not sure"]})])
    toolbox_with_llm.holder["llm"] = script.chat
    assert Patch(str(photo("bus"))).simple_query("In which city was this picture taken?") == "unknown"
    # an open question answered "no" is re-asked for guesses with the reason, kept off yes and no
    script = Script(describe=[ans("no"), json.dumps({"guesses": ["no", "cat", "dog"]})])
    toolbox_with_llm.holder["llm"] = script.chat
    assert Patch(str(photo("chelsea"))).simple_query("What is lying here?") == "cat"
    assert "yes/no answer" in script.messages("describe")[1][-1].content
    assert "no" in script.calls("describe")[1].json_schema["properties"]["guesses"]["items"]["not"]["enum"]


def test_a_knowledge_question_about_this_thing_is_asked_with_the_thing_named(toolbox_with_llm, photo):
    # with the classifier's "espresso (0.95)" among the findings the 1.5B said "cold"; asked of its knowledge
    # with the drink named, "hot"
    from hydra_vr.api import bind_toolbox

    script = Script(knowledge=[ans("hot")])
    toolbox_with_llm.holder["llm"] = script.chat
    Patch = bind_toolbox(toolbox_with_llm)
    assert Patch(str(photo("coffee"))).simple_query("Is this drink usually drunk hot or cold?") == "hot"
    [call] = script.calls("knowledge")
    assert call.messages[-1].content.startswith("Is this drink usually drunk hot or cold? (This drink is an espresso.)")
    assert "What a dictionary says of espresso: strong black coffee" in call.messages[-1].content  # WordNet's gloss
    assert "Objects detected" not in call.messages[-1].content  # no findings beside the named thing
    assert call.json_schema["properties"]["answer"]["enum"] == ["hot", "cold"]
    # the detector names the kind the question points at ("this vehicle" -> the bus it found at 0.79)
    script = Script(knowledge=[ans("no"), ans("people")])  # an ill-typed reply is re-asked, as in every role
    toolbox_with_llm.holder["llm"] = script.chat
    assert Patch(str(photo("bus"))).simple_query("What is this vehicle usually used for?") == "people"
    assert script.messages("knowledge")[0][-1].content.startswith("What is this vehicle usually used for? (This vehicle is a bus.)")
    assert "used for public transport" in script.messages("knowledge")[0][-1].content
    # a kind the detector has a class for but found none of: find()'s search names it (NanoDet misses the tie
    # under the coat; the classifier's region reads a Windsor tie at 0.57)
    script = Script(knowledge=[ans("suit")])
    toolbox_with_llm.holder["llm"] = script.chat
    assert Patch(str(photo("zidane"))).simple_query("What is this kind of tie usually worn with?") == "suit"
    assert script.messages("knowledge")[0][-1].content.startswith("What is this kind of tie usually worn with? (This kind of tie is a Windsor tie.)")
    # no confident name (the rocket's first label is missile at 0.30; the chelsea photo's cat and dog score
    # 0.40 each), or a question about the pixels: the findings
    for image, question, reply in [("rocket", "Which company manufactures this rocket?", "boeing"),
                                   ("chelsea", "What food does this animal usually eat?", "fish"),
                                   ("coffee", "What color is this drink?", "red")]:
        script = Script(describe=[ans(reply)])
        toolbox_with_llm.holder["llm"] = script.chat
        Patch(str(photo(image))).simple_query(question)
        assert not script.calls("knowledge") and len(script.calls("describe")) == 1


def test_a_count_no_search_settled_starts_at_one(toolbox_with_llm, photo):
    # "how many" presumes the thing; with no tool able to look for it, nothing supports a 0 from the findings
    from hydra_vr.api import bind_toolbox

    Patch = bind_toolbox(toolbox_with_llm)
    script = Script(describe=[ans("3")])
    toolbox_with_llm.holder["llm"] = script.chat
    assert Patch(str(photo("coffee"))).simple_query("How many sugar cubes are on the saucer?") == "3"
    assert script.calls("describe")[0].json_schema["properties"]["answer"]["minimum"] == 1
    # nor where the detector has a class for it and found none: its miss is no search that says there is none
    script = Script(describe=[ans("0"), ans("2")])
    toolbox_with_llm.holder["llm"] = script.chat
    assert Patch(str(photo("coffee"))).simple_query("How many dogs are lying under the table?") == "2"
    assert script.calls("describe")[0].json_schema["properties"]["answer"]["minimum"] == 1
    # a search over every pixel (outlines) settles it either way: a count may be 0
    script = Script(describe=[ans("0")])
    toolbox_with_llm.holder["llm"] = script.chat
    assert Patch(str(photo("coffee"))).simple_query("How many triangles are drawn there?") == "0"
    assert script.calls("describe")[0].json_schema["properties"]["answer"]["minimum"] == 0


def test_a_city_that_is_a_word_of_a_tool_label_is_reasked(toolbox_with_llm, photo):
    # the bus photo's classifier guesses "police van"; "police" and "van" are towns, but echoed labels here
    from hydra_vr.api import bind_toolbox

    script = Script(describe=[ans("van"), json.dumps({"guesses": ["police", "madrid", "seville"]})])
    toolbox_with_llm.holder["llm"] = script.chat
    Patch = bind_toolbox(toolbox_with_llm)
    assert Patch(str(photo("bus"))).simple_query("In which city was this picture taken?") == "madrid"
    retry = script.messages("describe")[1][-1].content
    assert "'van' is a word of what the tools named" in retry and "best guesses" in retry


def test_an_answer_of_another_category_is_reasked_by_the_backend_itself(toolbox_with_llm, photo):
    # "which animal?" -> "cup" is no kind of it: re-asked here for guesses, so the whole-image last resort
    # does not return the same refused answer
    from hydra_vr.api import bind_toolbox

    script = Script(describe=[ans("cup"), json.dumps({"guesses": ["spoon", "bee", "saucer"]})])
    toolbox_with_llm.holder["llm"] = script.chat
    Patch = bind_toolbox(toolbox_with_llm)
    assert Patch(str(photo("coffee"))).simple_query("Which animal is on the saucer?") == "bee"
    assert "'cup' is not a kind of animal" in script.messages("describe")[1][-1].content


def test_vipergpt_negated_presence_answer_against_the_programs_own_find_is_refused(toolbox_with_llm, sandbox, photo):
    # easy-VQA: "is there not a red shape?" answered "No red shape" after find("red") came back empty,
    # and yes to "is there not a blue shape?" after find("blue") found one: the question without its "not"
    body = 'final_answer = bool_to_yesno(bool(ImagePatch(image).find("bus")))'
    result = agent_for(Script(reasoner=[code(body)]), toolbox_with_llm, sandbox, mode="vipergpt").run(
        str(photo("bus")), "Is there not a bus in the photo?")
    assert result.steps[0].result["final_answer"] == "yes"
    assert "without its 'not': find('bus') found" in result.steps[0].observation
    assert result.answer == "no" and result.answer_source == "fallback simple_query"  # describe's own search
    body = 'final_answer = "No purple shape" if not ImagePatch(image).find("purple") else "There is one"'
    result = agent_for(Script(reasoner=[code(body)]), toolbox_with_llm, sandbox, mode="vipergpt").run(
        str(photo("bus")), "Is there not a purple shape?")  # a search over every pixel found none: yes
    assert "find('purple') found none" in result.steps[0].observation and result.answer == "yes"
    # the detector's miss is no search: "No giraffe" (read as no) stands; it shows nothing either way, so
    # presence_unsearched leaves it too
    body = 'final_answer = "No giraffe" if not ImagePatch(image).find("giraffe") else "There is a giraffe"'
    result = agent_for(Script(reasoner=[code(body)]), toolbox_with_llm, sandbox, mode="vipergpt").run(
        str(photo("bus")), "Is there no giraffe?")
    assert result.answer == "no" and "without its 'not'" not in result.steps[0].observation and result.checks == []
    # the program that answers with its "not" stands
    body = 'final_answer = bool_to_yesno(not ImagePatch(image).find("bus"))'
    result = agent_for(Script(reasoner=[code(body)]), toolbox_with_llm, sandbox, mode="vipergpt").run(
        str(photo("bus")), "Is there not a bus in the photo?")
    assert result.answer == "no" and "without its 'not'" not in result.steps[0].observation


def test_a_choice_answered_by_a_question_that_drops_the_choices_is_refused(toolbox_with_llm, sandbox, photo):
    # a young-or-old choice asked as "How old is she?": the describe LLM said "young" for Grace Hopper at 79
    from hydra_vr.agent.step import typed_guess
    from hydra_vr.question.frame import parse

    # "old" twice: describe asks a choice both ways round, and an answer that holds both ways is the LLM's
    script = Script(describe=[ans("young"), ans("old"), ans("old")])
    toolbox_with_llm.holder["llm"] = script.chat
    spec = parse("Is the woman young or old?")
    program = sandbox.run('final_answer = ImagePatch(image).simple_query("How old is she?")', str(photo("grace_hopper")))
    refused, why = typed_guess(program, spec)
    assert refused is None and "does not name the choices (young, old)" in why
    program = sandbox.run('final_answer = ImagePatch(image).simple_query("Is the woman young or old?")', str(photo("grace_hopper")))
    assert typed_guess(program, spec) == ("old", None)
    # a choice the program makes itself (a comparison, no reply) is its own
    program = sandbox.run('final_answer = "old" if 79 > 60 else "young"', str(photo("grace_hopper")))
    assert typed_guess(program, spec) == ("old", None)


def test_a_knowledge_answer_to_a_question_that_dropped_the_knowledge_is_refused(toolbox_with_llm, sandbox, photo):
    # The 1.5B's program asked what the foam on the drink is, without the "called", and the
    # findings' third label came back: "consomme"
    from hydra_vr.agent.step import typed_guess
    from hydra_vr.question.frame import parse

    question = "What is the pale foam on top of this drink called?"
    spec = parse(question)
    script = Script(describe=[ans("consomme")], knowledge=[ans("crema")])
    toolbox_with_llm.holder["llm"] = script.chat
    reworded = 'final_answer = ImagePatch(image).simple_query("What is the pale foam on top of this drink?")'
    program = sandbox.run(reworded, str(photo("coffee")))
    assert program.ok, program.error
    refused, why = typed_guess(program, spec)
    assert refused is None and "consomme" in why and "ask the question as given" in why
    # asked as given (the fallback), the knowledge route names the espresso: crema
    program = sandbox.run(f"final_answer = ImagePatch(image).simple_query({question!r})", str(photo("coffee")))
    assert typed_guess(program, spec) == ("crema", None)
    assert script.messages("knowledge")[0][-1].content.startswith(question + " (This drink is an espresso.)")
    # a question about the pixels is the program's to reword
    pixels = parse("What is on top of this drink?")
    toolbox_with_llm.holder["llm"] = Script(describe=[ans("foam")]).chat
    program = sandbox.run('final_answer = ImagePatch(image).simple_query("What is on top of the drink?")', str(photo("coffee")))
    assert typed_guess(program, pixels) == ("foam", None)


def test_a_question_about_what_is_behind_a_patch_is_asked_of_the_whole_photo(toolbox_with_llm, photo):
    # The 1.5B asked a man's crop what vehicle was behind the men, and the crop's findings said "car"
    from hydra_vr.api.image_patch import ImagePatch, bind_toolbox

    Patch = bind_toolbox(toolbox_with_llm)
    script = Script(describe=[ans("bus"), ans("coat"), ans("united states")])
    toolbox_with_llm.holder["llm"] = script.chat
    bus = Patch(str(photo("bus")))
    man = bus.find("man")[2]
    assert man.label == "person" and man.width < 200
    assert man.simple_query("What kind of vehicle is parked behind the men?") == "bus"
    assert "Image size: 810 x 1080 pixels" in script.seen["describe"][-1]  # the whole photo's findings
    assert "bus (score" in script.seen["describe"][-1]
    # about the man himself, his crop is asked
    assert man.simple_query("What is the man wearing?") == "coat"
    assert "Image size: 810 x 1080 pixels" not in script.seen["describe"][-1]
    # a pronoun stands for the person whose crop is asked
    her = Patch(str(photo("grace_hopper"))).find("woman")[0]
    assert her.simple_query("What country's flag is behind her?") == "united states"
    assert "Image size: 512 x 600 pixels" in script.seen["describe"][-1]


def test_beside_what_names_the_thing_a_question_places_its_thing_by():
    from hydra_vr.api.names import beside_what

    assert beside_what("What kind of vehicle is parked behind the men?") == "men"
    assert beside_what("What is next to her?") == "her"
    assert beside_what("What is to the left of the bearded man in the photo?") == "bearded man"
    assert beside_what("What is in front of the bus?") == "bus"
    assert beside_what("What is parked behind the man's car?") == "man car"  # its last word names the thing
    assert beside_what("What is hanging around the neck of the man?") is None
    assert beside_what("What color is that bus?") is None


def test_a_category_question_is_answered_from_the_classifier_at_the_level_asked(toolbox_with_llm, photo):
    # The classifier's labels that are kinds of the category (WordNet), named as a person would: the tabby-like
    # cat labels are "cat" asked which animal; no LLM call is made for it
    from hydra_vr.api import bind_toolbox

    script = Script(describe=[])
    toolbox_with_llm.holder["llm"] = script.chat
    Patch = bind_toolbox(toolbox_with_llm)
    image = Patch(str(photo("chelsea")))
    assert image.simple_query("What kind of animal is resting here?") == "cat"
    assert script.messages("describe") == []
    # a category none of the labels fall under is left to the LLM as before
    script2 = Script(describe=[ans("a cat")])
    toolbox_with_llm.holder["llm"] = script2.chat
    assert image.simple_query("Which vehicle is shown?") == "a cat"
    assert len(script2.messages("describe")) == 1


def test_a_small_thing_of_the_category_is_named_from_the_classifiers_region(toolbox_with_llm, photo):
    # A small cup of coffee pasted into a corner of the motorcycle photo: the whole photo's labels are the
    # motorcycle's, but the classifier's region for kinds of beverage, classified alone, is espresso; no LLM call
    from PIL import Image

    from hydra_vr.api import bind_toolbox

    scene = Image.open(photo("motorcycle")).convert("RGB")
    cup = Image.open(photo("coffee")).convert("RGB")
    scene.paste(cup.resize((int(cup.width * 0.4), int(cup.height * 0.4))), (0, 0))
    script = Script(describe=[])
    toolbox_with_llm.holder["llm"] = script.chat
    answer = toolbox_with_llm.simple_query(scene, "Which beverage is up in the corner?")
    assert (answer.text, answer.source) == ("espresso", "describe:category")
    assert "classified alone" in answer.evidence and script.messages("describe") == []
    # without the cup, nothing of the kind is there to name: the LLM is asked as before
    script2 = Script(describe=[ans("tea")])
    toolbox_with_llm.holder["llm"] = script2.chat
    assert bind_toolbox(toolbox_with_llm)(Image.open(photo("motorcycle")).convert("RGB")).simple_query(
        "Which beverage is up in the corner?") == "tea"
    assert len(script2.messages("describe")) == 1


def test_an_answer_written_down_without_looking_is_refused_in_the_first_program(toolbox_with_llm, sandbox, photo):
    # "moving" both ways round (describe asks a choice twice, its options reversed the second time)
    script = Script(reasoner=[code('final_answer = "parked"')], describe=[ans("moving"), ans("moving")])
    result = agent_for(script, toolbox_with_llm, sandbox, mode="vipergpt").run(str(photo("bus")), "Is the bus moving or parked?")
    assert result.steps[0].guess is None and "without calling any tool" in result.steps[0].feedback
    assert (result.answer, result.answer_source) == ("moving", "fallback simple_query")


def test_a_later_step_may_write_down_what_an_earlier_step_found(toolbox_with_llm, sandbox, photo):
    script = Script(
        planner=[plan("Find the bus"), plan("Answer from what the first step found")],
        reasoner=[code('buses = ImagePatch(image).find("bus")'), code('final_answer = "parked"')],
        summarizer=[decide("continue"), decide("answer", "parked")],
    )
    result = agent_for(script, toolbox_with_llm, sandbox, max_steps=2).run(str(photo("bus")), "Is the bus moving or parked?")
    assert result.steps[1].guess == "parked" and result.answer == "parked"
