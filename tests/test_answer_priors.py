"""The describe backend's answer priors. A yes/no question that no finding bears on (a state or a detail the tools
cannot see) is answered with the configured yes/no prior instead of the LLM's guess; a count of a thing no search could
settle gets the count prior. A question the findings do bear on (a colour, a presence search, a thing the detector
found) is still the LLM's to answer from them."""

import pytest

from tests.test_answer_roles import Script, ans, toolbox_with_llm  # noqa: F401  (shared fixtures)


@pytest.fixture(scope="module")
def cat(photo):
    from PIL import Image

    return Image.open(photo("chelsea")).convert("RGB")


def _describe(toolbox, script, **options):
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.question import parse

    # wired as hydra_vr.factory wires it: the question frame read, so the frame's own rules run first
    return DescribeVQA(ToolContext(toolbox=toolbox, llm=lambda: script.chat, read_question=parse), **options)


def test_a_state_no_tool_can_see_gets_the_prior_without_asking_the_llm(toolbox_with_llm, cat):
    script = Script()  # no describe reply queued: a call to the LLM fails the test
    answer = _describe(toolbox_with_llm, script).answer(cat, "Does the kitten look sleepy?")
    assert (answer.text, answer.source) == ("yes", "describe:prior")
    assert "prior" in answer.evidence and not script.calls("describe")
    said = _describe(toolbox_with_llm, Script(), yesno_prior="no").answer(cat, "Is the kitten purring?")
    assert (said.text, said.source) == ("no", "describe:prior")


def test_without_a_prior_the_llm_answers_the_same_question(toolbox_with_llm, cat):
    script = Script(describe=[ans("no")])
    answer = _describe(toolbox_with_llm, script, yesno_prior=None).answer(cat, "Does the kitten look sleepy?")
    assert (answer.text, answer.source) == ("no", "describe") and len(script.calls("describe")) == 1


@pytest.mark.parametrize("question", [
    "Is the kitten brown?",  # a colour the measures bear on
    "Is there a skateboard next to the kitten?",  # a presence question: the detector's miss is weak evidence
    "What is the kitten lying on?",  # not a yes/no
])
def test_questions_the_findings_bear_on_stay_the_llms(toolbox_with_llm, cat, question):
    script = Script(describe=[ans("no" if question.startswith("Is") else "sofa")])
    answer = _describe(toolbox_with_llm, script).answer(cat, question)
    assert answer.source != "describe:prior" and len(script.calls("describe")) == 1


def test_a_prior_that_is_no_answer_is_refused(toolbox_with_llm):
    with pytest.raises(ValueError, match="yesno_prior"):
        _describe(toolbox_with_llm, Script(), yesno_prior="maybe")


def test_a_count_no_search_can_settle_gets_the_count_prior_without_asking_the_llm(toolbox_with_llm, cat):
    script = Script()  # no describe reply queued: a call to the LLM fails the test
    answer = _describe(toolbox_with_llm, script).answer(cat, "How many whiskers does the kitten have?")
    assert (answer.text, answer.source) == ("2", "describe:prior")
    assert "whiskers" in answer.evidence and "count prior" in answer.evidence and not script.calls("describe")
    said = _describe(toolbox_with_llm, Script(), count_prior=3).answer(cat, "How many stripes can you see on it?")
    assert (said.text, said.source) == ("3", "describe:prior")


def test_a_count_of_a_thing_the_detector_found_stays_the_llms(toolbox_with_llm, cat):
    script = Script(describe=[ans("1")])
    answer = _describe(toolbox_with_llm, script).answer(cat, "How many cats are in the picture?")
    assert (answer.text, answer.source) == ("1", "describe") and len(script.calls("describe")) == 1


def test_without_a_count_prior_the_llm_answers_and_may_not_say_none(toolbox_with_llm, cat):
    script = Script(describe=[ans("0"), ans("4")])  # 0 is refused: no search said there are none
    answer = _describe(toolbox_with_llm, script, count_prior=None).answer(cat, "How many whiskers does the kitten have?")
    assert (answer.text, answer.source) == ("4", "describe") and len(script.calls("describe")) == 2


@pytest.mark.parametrize("prior", [0, -2, 1.5, "two", True])
def test_a_count_prior_that_is_no_count_is_refused(toolbox_with_llm, prior):
    with pytest.raises(ValueError, match="count_prior"):
        _describe(toolbox_with_llm, Script(), count_prior=prior)


def test_a_count_asked_of_knowledge_is_the_llms_knowledge_not_the_prior(toolbox_with_llm, cat):
    # the knowledge route where the classifier names the animal surely enough, else the LLM from the findings
    script = Script(knowledge=[ans("4")], describe=[ans("4")])
    answer = _describe(toolbox_with_llm, script).answer(cat, "How many legs does this animal usually have?")
    assert answer.text == "4" and answer.source in {"describe:knowledge", "describe"}
    assert len(script.calls("knowledge")) + len(script.calls("describe")) == 1
