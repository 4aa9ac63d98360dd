"""The answer checks: declared objects, one runner, firings collected per episode, switched off by name.

Loop logic with recorded tool calls of its own (no model): the checks read calls, not pixels.
"""

from __future__ import annotations

import pytest

from hydra_vr.agent import checks
from hydra_vr.question.frame import parse
from hydra_vr.api.types import Answer, Box, Detection, ToolCallRecord
from hydra_vr.config import load_config
from hydra_vr.eval.report import build_report, render_markdown


def _find(name: str, boxes: list[list[float]], unsearchable: bool = False) -> ToolCallRecord:
    dets = [Detection(Box(*b), name, 0.9, "test") for b in boxes]
    return ToolCallRecord("find", {"name": name}, dets, 1.0, {"unsearchable": True} if unsearchable else {})


def _query(question: str, reply: str) -> ToolCallRecord:
    return ToolCallRecord("simple_query", {"question": question}, Answer(reply, "describe"), 1.0)


def test_every_check_is_declared_once_with_a_name_and_the_kinds_it_reads() -> None:
    names = checks.check_names()
    assert len(names) == len(set(names)) and "literal_box" in names and "unfounded_negative" in names
    assert all(c.kinds and c.doc for c in checks.ANSWER_CHECKS)


def test_the_first_refusal_wins_and_is_recorded_in_the_episode() -> None:
    frame = parse("How many kites are flying?")
    blind = [_find("kite", [], unsearchable=True)]
    with checks.collecting() as fired:
        reason = checks.check_answer(frame, "0", blind)
        assert checks.check_answer(frame, "3", [_find("kite", [[0, 0, 5, 5]] * 3)]) is None
    assert reason is not None and "cannot look for that name" in reason
    assert [(f.check, f.answer) for f in fired] == [("unfounded_negative", "0")]


def test_a_check_applies_only_to_the_answer_kinds_it_declares() -> None:
    # a choice answered by an open simple_query: options_dropped refuses it; the same reply to an open question passes
    calls = [_query("How big is the dog?", "small")]
    assert checks.check_answer(parse("Is the dog big or small?"), "small", calls) is not None
    assert checks.check_answer(parse("What size is the dog?"), "small", calls) is None


def test_disabled_checks_do_not_run_and_unknown_names_are_an_error() -> None:
    frame = parse("Is the dog big or small?")
    calls = [_query("How big is the dog?", "small")]
    with checks.collecting() as fired, checks.disabled(["options_dropped"]):
        assert checks.check_answer(frame, "small", calls) is None
    assert fired == []
    with pytest.raises(ValueError, match="unknown answer checks"), checks.disabled(["no_such_check"]):
        pass


@pytest.mark.parametrize(("code", "refused"), [
    ("final_answer = ImagePatch(image, 100, 100, 200, 200)", True),
    ("p = ImagePatch(image)\nfinal_answer = p.crop(10, 20, 300, 400)", True),
    ("final_answer = ImagePatch(image, x1=5, y1=5, x2=50, y2=60)", True),
    ("final_answer = ImagePatch(image).find('kettle')[0]", False),
])
def test_a_box_of_numbers_the_program_wrote_is_no_grounding(code: str, refused: bool) -> None:
    evidence = checks.Evidence([_find("kettle", [[1, 2, 30, 40]])], code)
    assert (checks.run_checks("box", "[100.0, 100.0, 200.0, 200.0]", evidence) is not None) is refused


def test_a_literal_box_that_a_find_returned_is_kept() -> None:
    evidence = checks.Evidence([_find("kettle", [[100, 100, 200, 200]])], "final_answer = ImagePatch(image, 100, 100, 200, 200)")
    assert checks.run_checks("box", "[100.0, 100.0, 200.0, 200.0]", evidence) is None


@pytest.mark.parametrize(("code", "calls", "refused"), [
    ("image_patch = ImagePatch(image)\nfinal_answer = 'upward'", [], True),  # written down, nothing looked
    ("final_answer = 4", [], True),
    ("final_answer = 'upward'", [_query("Does the vane point upward or downward?", "upward")], False),  # a tool looked
    ("if len(kites) > 2:\n    final_answer = 'yes'\nelse:\n    final_answer = 'no'", [], False),  # from earlier variables
    ("final_answer = kites[0].simple_query('Which way?')", [], False),
    ("final_answer = 'up'\nif kites:\n    final_answer = 'down'", [], False),
])
def test_an_answer_the_program_wrote_without_any_tool_is_refused(code: str, calls: list, refused: bool) -> None:
    frame = parse("Does the weather vane point upward or downward?")
    answer = "4" if code == "final_answer = 4" else "upward"
    kind_frame = parse("How many gulls sit on the roof?") if answer == "4" else frame
    with checks.collecting() as fired:
        reason = checks.check_answer(kind_frame, answer, calls, code)
    assert (reason is not None) is refused
    assert [f.check for f in fired] == (["literal_answer"] if refused else [])
    assert checks.check_answer(frame, "upward", [], "") is None  # no code (the summarizer's answer): not this check's


@pytest.mark.parametrize(("question", "code", "finds", "answer", "refused"), [
    # the find tells the fox is there; which way it faces is the program's guess
    ("Is the fox facing the river or the forest?", "foxes = ImagePatch(image).find('fox')\nif foxes:\n    final_answer = 'river'",
     ["fox"], "river", True),
    ("Is the fox on the left or the right?", "foxes = ImagePatch(image).find('fox')\nif foxes:\n    final_answer = 'left'\n"
     "else:\n    final_answer = 'right'", ["fox"], "left", True),
    ("What colour is the scooter?", "s = ImagePatch(image).find('scooter')\nif s:\n    final_answer = 'green'", ["scooter"],
     "green", True),
    # the presence of an option decides it
    ("Is the pet a hamster or a rabbit?", "p = ImagePatch(image)\nif p.find('hamster'):\n    final_answer = 'hamster'\n"
     "else:\n    final_answer = 'rabbit'", ["hamster"], "hamster", False),
    ("What colour is the scooter?", "s = ImagePatch(image).find('green scooter')\nif s:\n    final_answer = 'green'",
     ["green scooter"], "green", False),
    # the program read more of its finds than that they came back
    ("Is the fox on the left or the right?", "foxes = ImagePatch(image).find('fox')\nif foxes[0].horizontal_center < 50:\n"
     "    final_answer = 'left'\nelse:\n    final_answer = 'right'", ["fox"], "left", False),
    ("Is there one fox or a pair?", "foxes = ImagePatch(image).find('fox')\nif len(foxes) == 1:\n    final_answer = 'one'\n"
     "else:\n    final_answer = 'pair'", ["fox"], "one", False),
    ("Is the fox facing the river or the forest?", "foxes = ImagePatch(image).find('fox')\nfinal_answer = foxes[0].simple_query('?')",
     ["fox"], "river", False),
])
def test_a_literal_that_only_a_finds_presence_gated_is_refused(question: str, code: str, finds: list[str], answer: str,
                                                               refused: bool) -> None:
    calls = [_find(name, [[10, 10, 40, 40]]) for name in finds]
    with checks.collecting() as fired:
        reason = checks.check_answer(parse(question), answer, calls, code)
    assert (reason is not None) is refused
    assert [f.check for f in fired] == (["literal_answer"] if refused else [])
    if refused:
        assert "find('" in reason and "tells only whether" in reason


def test_config_names_the_checks_to_switch_off() -> None:
    cfg = load_config("default", ["answers.disable=[miscount, literal_box]"])
    assert cfg.answers.disable == ["miscount", "literal_box"]
    from hydra_vr.agent.loop import HydraAgent

    with pytest.raises(ValueError, match="unknown checks"):
        HydraAgent(cfg.agent, None, None, None, disabled_checks=["nonsense"])  # type: ignore[arg-type]


def test_the_report_counts_firings_per_check_with_the_score_of_those_rows() -> None:
    rows = [
        {"id": "a", "dataset": "user", "task": "vqa", "query": "How many?", "prediction": "2", "score": 1.0,
         "metric": "vqa_acc", "scores": {"vqa_acc": 1.0}, "checks": ["miscount"], "steps": 1, "seconds": 1.0},
        {"id": "b", "dataset": "user", "task": "vqa", "query": "How many?", "prediction": "0", "score": 0.0,
         "metric": "vqa_acc", "scores": {"vqa_acc": 0.0}, "checks": ["miscount", "unfounded_negative"], "steps": 1,
         "seconds": 1.0},
        {"id": "c", "dataset": "user", "task": "vqa", "query": "How many?", "prediction": "1", "score": 1.0,
         "metric": "vqa_acc", "scores": {"vqa_acc": 1.0}, "steps": 1, "seconds": 1.0},
    ]
    report = build_report(rows)
    assert report["checks"] == {"miscount": {"fired": 2, "score": 50.0}, "unfounded_negative": {"fired": 1, "score": 0.0}}
    assert "| miscount | 2 | 50.00 |" in render_markdown(report)


def test_checks_read_the_parsed_frame_and_one_check_runs_by_name() -> None:
    # what a count question counts and what a negated presence question looks for come from the frame
    frame = parse("How many petals does each daisy have?")
    assert frame.counted is not None and frame.counted.what == ("petal",)
    daisy = [_find("daisy", [[0, 0, 9, 9]])]
    with checks.collecting() as fired:
        assert checks.check_answer(frame, "1", daisy) is not None  # how many daisies, not petals
        assert checks.run_check("miscount", "1", checks.Evidence(daisy), frame) is not None
        assert checks.run_check("miscount", "5", checks.Evidence(daisy), frame) is None
    assert [f.check for f in fired] == ["miscount", "miscount"]
    with checks.disabled(["miscount"]):
        assert checks.run_check("miscount", "1", checks.Evidence(daisy), frame) is None
    negated = parse("Is there no kettle in this kitchen?")
    assert negated.presence is not None and negated.presence.negated
    kettles = [_find("kettle", [[1, 1, 4, 4]])]
    assert checks.check_answer(parse("Is there not a kettle?"), "yes", kettles) is not None
    assert checks.check_answer(parse("Is there not a kettle?"), "no", kettles) is None


def test_a_presence_answer_needs_a_call_that_looked_for_the_thing() -> None:
    frame = parse("Is there a hexagon drawn on the card?")
    objects = [_find("object", [[0, 0, 9, 9]])]  # "objects" were found: nothing was looked for in particular
    reason = checks.check_answer(frame, "yes", objects)
    assert reason is not None and "the calls showed the opposite" in reason and "find('object')" in reason
    # from nothing: a "there is" may still be known (it stands), a "there is none" needs a search
    unplaced = parse("Is there a hexagon?")
    assert checks.check_answer(unplaced, "yes", []) is None and checks.check_answer(unplaced, "no", []) is not None
    assert checks.check_answer(frame, "no", []) is None  # placed ("on the card"): a "none" is not judged
    assert checks.check_answer(frame, "yes", [_find("hexagon", [[0, 0, 9, 9]])]) is None
    assert checks.check_answer(frame, "no", [_query("Is a hexagon on the card?", "no")]) is None
    # a search for a kind, a group or a sibling of the thing is a search for it (WordNet)
    assert checks.check_answer(parse("Are there geese on the pond?"), "yes", [_find("bird", [[1, 1, 5, 5]])]) is None
    assert checks.check_answer(parse("Is a woman standing there?"), "no", [_find("people", [])]) is None
    # what a search returned counts: find("animal") came back with a squirrel
    squirrel = ToolCallRecord("find", {"name": "animal"}, [Detection(Box(1, 1, 5, 5), "squirrel", 0.8, "test")], 1.0, {})
    assert checks.check_answer(parse("Is there a squirrel?"), "yes", [squirrel]) is None
    # a colour is looked for by name ("red" for "a red shape"); a question with nothing particular is left alone
    assert checks.check_answer(parse("Is there a red shape?"), "no", [_find("red", [])]) is None
    assert checks.check_answer(parse("Is there anything on the table?"), "yes", []) is None


def test_a_question_that_takes_the_thing_as_given_shows_nothing_of_it() -> None:
    frame = parse("Is there a green lamp?")
    echo = [_query("What color is the green lamp?", "green")]  # the reply echoes the question: it shows nothing
    assert checks.check_answer(frame, "yes", echo + [_find("chair", [[0, 0, 4, 4]])]) is not None  # only a chair shown
    assert checks.check_answer(frame, "no", echo) is None  # a search was made, nothing showed the lamp
    assert checks.check_answer(frame, "yes", [_query("Is there a green lamp?", "yes")]) is None
    assert checks.check_answer(frame, "yes", [_query("What stands on the desk?", "a lamp")]) is None  # named unasked
    # "there is none" needs a call that looked; one that found other things shows what is there
    assert checks.check_answer(frame, "no", [_query("Is there a green lamp?", "yes")]) is not None
    assert checks.check_answer(frame, "no", [_find("chair", [[0, 0, 4, 4]])]) is None
    assert checks.check_answer(frame, "no", []) is not None


def test_an_answer_to_which_kind_names_a_kind_of_it() -> None:
    frame = parse("Which reptile is basking on the rock?")
    assert frame.category == "reptile"
    reason = checks.check_answer(frame, "teddy bear", [])
    assert reason is not None and "not a kind of reptile" in reason
    assert checks.check_answer(frame, "lizard", []) is None and checks.check_answer(frame, "green iguana", []) is None
    assert checks.check_answer(frame, "zorblax", []) is None  # a name WordNet does not know is not judged
    # a category of no thing a photo shows ("which language") is not judged
    assert checks.check_answer(parse("Which language is the menu printed in?"), "spanish", []) is None


def _focus(blurry: bool, *, background: bool = False, box: list[float] | None = None) -> ToolCallRecord:
    from hydra_vr.api.focus import Focus

    return ToolCallRecord("focus", {"box": box, "background": background}, Focus(0.1 if blurry else 0.9, "region", 30.0), 1.0)


def test_a_focus_answer_against_every_measure_of_the_asked_region_is_refused() -> None:
    choice = parse("Are the hills behind the hikers crisp or blurred?")
    assert choice.focus is not None and choice.focus.region == "background"
    hazy = [_focus(True, background=True)]
    assert checks.run_check("against_focus", "crisp", checks.Evidence(hazy), choice) is not None
    assert checks.run_check("against_focus", "blurred", checks.Evidence(hazy), choice) is None
    # measures that disagree, or of another region, decide nothing
    mixed = [_focus(True, background=True), _focus(False, background=True)]
    assert checks.run_check("against_focus", "crisp", checks.Evidence(mixed), choice) is None
    assert checks.run_check("against_focus", "crisp", checks.Evidence([_focus(True, box=[0, 0, 5, 5])]), choice) is None
    yesno = parse("Is the snapshot out of focus?")
    assert yesno.focus is not None and yesno.focus.region == "photo" and yesno.focus.claim("yes") == "blurry"
    assert checks.run_check("against_focus", "no", checks.Evidence([_focus(True)]), yesno) is not None
    # verify_property with a focus word is a measure too; its trace form (a dict) reads the same
    said = ToolCallRecord("verify_property", {"name": "snapshot", "property": "blurry"}, False, 1.0)
    assert checks.run_check("against_focus", "yes", checks.Evidence([said]), yesno) is not None
    stored = ToolCallRecord.from_dict(_focus(False).to_dict())
    assert checks.run_check("against_focus", "yes", checks.Evidence([stored]), yesno) is not None


def test_focus_words_that_name_other_things_are_no_focus_question() -> None:
    assert parse("Is the blade of the axe sharp?").focus is None  # an edge, not focus
    assert parse("Is the lake water clear?").focus is None
    assert parse("Is the portrait not blurry?").focus is None  # negated: not judged
    assert parse("Is the cyclist in focus?").focus.region == "thing"


def _episode(question: str):
    from hydra_vr.agent.strategy import Episode
    from hydra_vr.agent.types import EpisodeResult

    return Episode("unused.jpg", question, "vqa", parse(question),
                   EpisodeResult(question, "vqa", "unused.jpg", "no_rl", None, [], []))


def test_at_the_end_the_measured_focus_answer_replaces_refused_guesses() -> None:
    from hydra_vr.agent.strategies.common import typed_fallback

    hazy = [_focus(True, background=True)]
    ep = _episode("Is the scenery behind the runner crisp or blurred?")
    with checks.collecting() as fired:
        typed_fallback(None, ep, ["yes", "crisp", "crisp"], role="hydra", calls=hazy)  # type: ignore[arg-type]
    assert (ep.result.answer, ep.result.answer_source) == ("blurred", "measured (against_focus)")
    assert fired == []  # the guesses were judged when they were given: no second firing
    kept = _episode("Is the scenery behind the runner crisp or blurred?")
    typed_fallback(None, kept, ["blurred"], role="hydra", calls=hazy)  # type: ignore[arg-type]
    assert (kept.result.answer, kept.result.answer_source) == ("blurred", "typed guess")
    # measures that disagree give no answer: the guesses stand as before
    torn = _episode("Is the scenery behind the runner crisp or blurred?")
    typed_fallback(None, torn, ["crisp"], role="hydra",  # type: ignore[arg-type]
                   calls=[_focus(True, background=True), _focus(False, background=True)])
    assert torn.result.answer == "crisp"
    assert checks.measured_answer(parse("Is the lake water clear?"), hazy) is None  # no focus question


def test_a_written_name_or_fact_is_not_refused_for_want_of_a_tool() -> None:
    # an open answer may be the reasoner's own knowledge of something the question itself holds
    frame = parse("What language is 'bonjour' a word of?")
    assert checks.check_answer(frame, "french", [], "final_answer = 'french'") is None


@pytest.mark.parametrize(("question", "answer", "refused"), [
    ("Where does this parrot usually sleep?", "macaw", True),  # a kind of the parrot asked about, not where
    ("What is the chef cutting?", "chef", True),
    ("What is the chef cutting?", "onion", False),
    ("Which tree is this?", "oak", False),  # asks which kind: the kind is the answer
    ("What is growing beside the fence?", "ivy", False),
    ("What is the striped shape?", "triangle", False),  # asks what the shape is: a kind of shape answers
    ("What is the bird on the wire carrying?", "sparrow", True),
    ("What does the road sign say?", "stop", False),  # text read off the sign, though WordNet has a "stop" sign
])
def test_an_answer_naming_only_the_thing_asked_about_is_refused(question: str, answer: str, refused: bool) -> None:
    with checks.collecting() as fired:
        reason = checks.check_answer(parse(question), answer, [_query(question, answer)])
    assert (reason is not None) is refused
    assert [f.check for f in fired] == (["restated_subject"] if refused else [])


def test_a_count_of_every_thing_where_a_colour_is_counted_is_rewritten() -> None:
    frame = parse("How many green apples sit in the bowl?")
    apples = [_find("apples", [[0, 0, 5, 5], [6, 0, 9, 5], [0, 6, 5, 9]])]
    reason = checks.check_answer(frame, "3", apples)
    assert reason is not None and "find('green apples')" in reason and "whatever its colour" in reason
    # the colour was looked at: by the find's own name, or by a property check; or the count is another number
    assert checks.check_answer(frame, "2", [_find("green apples", [[0, 0, 5, 5], [6, 0, 9, 5]])]) is None
    verified = ToolCallRecord("verify_property", {"name": "apple", "property": "green"}, True, 1.0, {})
    assert checks.check_answer(frame, "3", [*apples, verified]) is None
    assert checks.check_answer(frame, "1", apples) is None
    # no colour asked ("dark" only shades the blue), or a colour of something else: nothing to judge
    assert checks.check_answer(parse("How many apples sit in the bowl?"), "3", apples) is None
    shaded = parse("How many dark blue kites fly above the beach?")
    assert "find('blue kite')" in (checks.check_answer(shaded, "2", [_find("kite", [[0, 0, 1, 1], [2, 2, 3, 3]])]) or "")
    assert checks.check_answer(parse("How many people in red shirts are there?"), "3", [_find("people", [[0, 0, 1, 1]] * 3)]) is None


def test_rewrites_are_declared_recorded_with_what_replaced_the_answer_and_switched_off_by_name() -> None:
    assert {"read_patch", "composed_reply", "nobody_there", "one_of_many", "placed_box"} <= set(checks.check_names())
    riding = parse("Is anybody riding the horse?")
    horse = [_find("horse", [[10, 10, 90, 90]])]
    looked: list[str] = []

    def look(name: str) -> list:
        looked.append(name)
        return []

    with checks.collecting() as fired:
        value, why = checks.rewrite("nobody_there", "yes", checks.Evidence(horse, look=look), riding)
    assert (value, looked) == ("no", ["person"]) and "found no one" in (why or "")
    assert [f.to_dict() for f in fired] == [{"check": "nobody_there", "answer": "yes", "reason": why, "to": "no"}]
    # a person the program or the look found is the evidence; switched off, the answer stands
    rider = [_find("person", [[20, 5, 60, 50]])]
    assert checks.rewrite("nobody_there", "yes", checks.Evidence(horse + rider, look=look), riding) == ("yes", None)
    assert checks.rewrite("nobody_there", "yes", checks.Evidence(horse, look=lambda n: rider[0].result), riding) == ("yes", None)
    with checks.disabled(["nobody_there"]):
        assert checks.rewrite("nobody_there", "yes", checks.Evidence(horse, look=look), riding) == ("yes", None)
    # the replies a program glued to the question's words; the text of a patch a reading question returned
    wearing = parse("What are the two boys wearing?")
    glued = [_query("What is the boy wearing?", "jacket"), _query("What is the other boy wearing?", "jacket")]
    assert checks.rewrite("composed_reply", "two boys wearingjacketjacket", checks.Evidence(glued), wearing)[0] == "jacket"
    banner = ToolCallRecord("find", {"name": "text"}, [Detection(Box(5, 5, 80, 20), "text", 0.9, "ocr", text="OPEN LATE")], 1.0)
    patch = {"box": [5, 5, 80, 20]}
    assert checks.rewrite("read_patch", patch, checks.Evidence([banner]), parse("What does the banner say?"))[0] == "OPEN LATE"
    assert checks.rewrite("read_patch", patch, checks.Evidence([banner]), parse("How many banners are there?")) == (patch, None)
    # a grounding box (no frame): the patch the expression's place picks among one find's patches
    cups = [_find("cup", [[300, 50, 380, 120], [10, 50, 90, 120]])]
    box, why = checks.rewrite("placed_box", [300, 50, 380, 120], checks.Evidence(cups, query="the cup on the far left"), None)
    assert box == [10, 50, 90, 120] and why


def test_a_grounding_answer_of_several_patches_becomes_the_one_picked_for_the_expression() -> None:
    kites = [[5, 5, 40, 30], [200, 10, 260, 50], [90, 120, 130, 160]]
    asked: list[int] = []

    def pick() -> list[float]:
        asked.append(1)
        return kites[2]

    ev = checks.Evidence(query="the kite with the long tail", pick=pick)
    with checks.collecting() as fired:
        box, why = checks.rewrite("one_of_many", kites, ev, None)
    assert box == kites[2] and "held 3 patches" in (why or "") and [f.check for f in fired] == ["one_of_many"]
    # one patch, no way to pick, or a pick that failed: left alone
    assert checks.rewrite("one_of_many", kites[:1], ev, None) == (kites[:1], None)
    assert checks.rewrite("one_of_many", kites, checks.Evidence(query="the kite"), None) == (kites, None)
    assert checks.rewrite("one_of_many", kites, checks.Evidence(query="the kite", pick=lambda: None), None) == (kites, None)
    assert checks.rewrite("one_of_many", kites, checks.Evidence(query="the kite", pick=lambda: kites[0]), None) == (kites, None)
    with checks.disabled(["one_of_many"]):
        assert checks.rewrite("one_of_many", kites, ev, None) == (kites, None)
    assert len(asked) == 1


@pytest.mark.parametrize(("question", "answer", "to"), [
    ("Why is the pavement shiny?", "The pavement is shiny because it rained last night.", "because it rained last night"),
    ("For what reason would a cyclist wear this?", "A cyclist wears it to protect the head", "to protect the head"),
    ("Why are the shutters closed?", "The shutters are closed due to the storm", "due to the storm"),
])
def test_a_why_question_answered_with_a_sentence_keeps_its_reason_clause(question: str, answer: str, to: str) -> None:
    frame = parse(question)
    assert frame.reason
    with checks.collecting() as fired:
        value, why = checks.rewrite("reason_clause", answer, checks.Evidence([]), frame)
    assert value == to and why and fired[0].check == "reason_clause"


@pytest.mark.parametrize(("question", "answer"), [
    ("Why is the pavement shiny?", "rain"),  # already short
    ("Why is the pavement shiny?", "The van is parked next to the shop entrance"),  # "to" before no verb: no reason
    ("What is the van parked next to?", "The van is parked next to the shop entrance so that people see it"),  # no why
])
def test_a_reason_clause_is_taken_only_from_a_sentence_answering_why(question: str, answer: str) -> None:
    assert checks.rewrite("reason_clause", answer, checks.Evidence([]), parse(question)) == (answer, None)


@pytest.mark.parametrize("question, answer, calls, refused", [
    # the kite's presence is no evidence of what it is doing
    ("Is the kite on the beach flying?", "yes", [_find("kite", [[2, 2, 8, 8]])], True),
    ("Are the sheep lying down?", "no", [_find("sheep", [[2, 2, 8, 8]])], True),
    # a find of a kind or group of the subject tells no more ("person" for the girl)
    ("Is the girl laughing?", "yes", [_find("person", [[2, 2, 8, 8]])], True),
    # what is not there does not do it
    ("Is the kite on the beach flying?", "no", [_find("kite", [])], False),
    # another thing the question names was looked for: its find is the evidence
    ("Is the girl wearing a scarf?", "yes", [_find("girl", [[2, 2, 8, 8]]), _find("scarf", [[3, 3, 5, 5]])], False),
    # a call that looked further
    ("Is the kite on the beach flying?", "yes", [_find("kite", [[2, 2, 8, 8]]), _query("Is the kite flying?", "yes")], False),
    # a colour is measured by the find itself; a presence question is answered by it
    ("Is the van white?", "yes", [_find("white van", [[2, 2, 8, 8]])], False),
    ("Is there a kite?", "yes", [_find("kite", [[2, 2, 8, 8]])], False),
])
def test_a_yes_no_about_how_a_thing_is_needs_more_than_its_find(question: str, answer: str, calls: list,
                                                                 refused: bool) -> None:
    reason = checks.check_answer(parse(question), answer, calls)
    assert (reason is not None and "tells whether it is there" in reason) is refused
    if not refused:
        assert reason is None or "tells whether it is there" not in reason
