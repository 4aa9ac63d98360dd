"""The describe backend's yes/no prior: a yes/no question that no finding bears on (a state or a detail the tools
cannot see) is answered with the configured prior instead of the LLM's guess; a question the findings do bear on
(a colour, a presence search) is still the LLM's to answer from them."""

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


def test_a_presence_no_search_could_settle_gets_the_prior(toolbox_with_llm, cat):
    # a skateboard is a detector class, and its miss is no evidence there is none; a feather no tool looks for at all
    for question in ("Is there a skateboard next to the kitten?", "Is there a feather near its paw?"):
        script = Script()
        answer = _describe(toolbox_with_llm, script).answer(cat, question)
        assert (answer.text, answer.source) == ("yes", "describe:prior") and not script.calls("describe")


def test_a_presence_the_detector_settles_is_its_answer_not_the_prior(toolbox_with_llm, cat):
    answer = _describe(toolbox_with_llm, Script()).answer(cat, "Is there a cat in the picture?")
    assert (answer.text, answer.source) == ("yes", "describe:search")


@pytest.mark.parametrize("question", [
    "Is the kitten brown?",  # a colour the measures bear on
    "Is there no skateboard next to the kitten?",  # a negated presence: the prior says nothing of which way round
    "What is the kitten lying on?",  # not a yes/no
])
def test_questions_the_findings_bear_on_stay_the_llms(toolbox_with_llm, cat, question):
    script = Script(describe=[ans("no" if question.startswith("Is") else "sofa")])
    answer = _describe(toolbox_with_llm, script).answer(cat, question)
    assert answer.source != "describe:prior" and len(script.calls("describe")) == 1


def test_a_prior_that_is_no_answer_is_refused(toolbox_with_llm):
    with pytest.raises(ValueError, match="yesno_prior"):
        _describe(toolbox_with_llm, Script(), yesno_prior="maybe")
