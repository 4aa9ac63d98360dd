"""The describe backend's order check: a choice the LLM answers is asked again with its options in reverse order. An
answer that holds both ways round is the LLM's; one that follows the order (the last option both times) says nothing
of the photo, and the configured prior, the first option as written, answers instead."""

import pytest

from tests.test_answer_roles import Script, ans, toolbox_with_llm  # noqa: F401  (shared fixtures)
from tests.test_yesno_prior import _describe, cat  # noqa: F401  (shared fixtures)

QUESTION = "Is the kitten asleep or awake?"  # a state no tool measures: the LLM's to pick


def _asked(script: Script) -> list[str]:
    return [call.messages[-1].content for call in script.calls("describe")]


def test_a_pick_that_follows_the_order_gives_way_to_the_first_option(toolbox_with_llm, cat):
    script = Script(describe=[ans("awake"), ans("asleep")])  # the last option, each time
    answer = _describe(toolbox_with_llm, script).answer(cat, QUESTION)
    assert (answer.text, answer.source) == ("asleep", "describe:order")
    first, turned = _asked(script)
    assert "asleep or awake" in first and "awake or asleep" in turned
    assert '"awake", "asleep"' in turned  # the expected-answer line lists them reversed too
    assert "follows the options' order" in answer.evidence


def test_a_pick_that_holds_both_ways_round_is_kept(toolbox_with_llm, cat):
    script = Script(describe=[ans("awake"), ans("awake")])
    answer = _describe(toolbox_with_llm, script).answer(cat, QUESTION)
    assert (answer.text, answer.source) == ("awake", "describe") and len(script.calls("describe")) == 2
    assert "Asked as 'Is the kitten awake or asleep?'" in answer.evidence


def test_without_the_prior_the_llm_is_asked_once(toolbox_with_llm, cat):
    script = Script(describe=[ans("awake")])
    answer = _describe(toolbox_with_llm, script, choice_prior=None).answer(cat, QUESTION)
    assert (answer.text, answer.source) == ("awake", "describe") and len(script.calls("describe")) == 1


def test_a_choice_the_measures_narrowed_is_not_asked_again(toolbox_with_llm, cat):
    # a colour choice: the options the kitten's measured colours rule out are dropped before the LLM picks, so what it
    # picks from is no longer the question's order
    script = Script(describe=[ans("brown")])
    answer = _describe(toolbox_with_llm, script).answer(cat, "Is the kitten brown or green?")
    assert answer.source == "describe" and len(script.calls("describe")) == 1


def test_a_yes_or_no_written_as_a_choice_is_asked_once(toolbox_with_llm, cat):
    # verify_property asks "<question> Answer yes or no.": parsed as a choice of yes and no, but no order to check
    script = Script(describe=[ans("no")])
    answer = _describe(toolbox_with_llm, script).answer(cat, "Is the kitten hungry? Answer yes or no.")
    assert answer.text == "no" and len(script.calls("describe")) == 1


def test_a_prior_that_is_no_option_is_refused(toolbox_with_llm):
    with pytest.raises(ValueError, match="choice_prior"):
        _describe(toolbox_with_llm, Script(), choice_prior="last")


@pytest.mark.parametrize(("question", "options", "turned"), [
    ("Is the mug hot or cold?", ("hot", "cold"), "Is the mug cold or hot?"),
    ("Is the hot plate hot or cold?", ("hot", "cold"), "Is the hot plate cold or hot?"),  # the options' own place
    ("Which is nearer, the tram, the van or the kiosk?", ("tram", "van", "kiosk"),
     "Which is nearer, the kiosk, the van or the tram?"),
    ("Is the sail red or blue?", ("red", "green"), None),  # an option not written in it
])
def test_options_reversed_in_the_question(question, options, turned):
    from hydra_vr.api.backends.describe import _options_reversed

    assert _options_reversed(question, options) == turned
