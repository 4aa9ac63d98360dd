"""Loop logic with a scripted LLM, a real sandbox and the real embedded vision tools."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from hydra_vr.agent.loop import AgentInputError, HydraAgent
from hydra_vr.agent.parsing import extract_code, parse_planner_output
from hydra_vr.api.types import Answer
from hydra_vr.config import AgentConfig
from hydra_vr.controller import REPLAN, PlannerProbabilityController
from hydra_vr.sandbox import Sandbox
from tests.scripted_roles import RoleQueues

ROLE_MARKERS = {
    "planner": "You plan the next step",
    "reasoner": "You write short Python programs",
    "summarizer": "You decide whether",
    "final": "The step limit was reached",
}


class RoleScript(RoleQueues):
    """Queues of replies per loop role, served by one ScriptedChat (routed by system prompt)."""

    def __init__(self, **queues: list[str]) -> None:
        super().__init__(ROLE_MARKERS, **queues)


def plan(*instructions: str, answer: str = "") -> str:
    n = len(instructions)
    return json.dumps({"instructions": [{"instruction": s, "probability": (n - i) / (n * (n + 1) / 2)} for i, s in enumerate(instructions)], "answer": answer})


def code(body: str) -> str:
    return f"```python\n{body}\n```"


def decide(decision: str, answer: str = "") -> str:
    return json.dumps({"decision": decision, "answer": answer})


@pytest.fixture(scope="module")
def sandbox(embedded_toolbox):
    with Sandbox(embedded_toolbox, timeout_s=10) as sb:
        yield sb


def make_agent(script: RoleScript, toolbox, sandbox, controller=None, **cfg) -> HydraAgent:
    return HydraAgent(AgentConfig(**cfg), script.chat, toolbox, sandbox, controller=controller)


def test_two_steps_with_persistent_variables_then_answer(embedded_toolbox, sandbox, photo):
    script = RoleScript(
        planner=[plan("Find the cups", "Count the cups"), plan("Ask what color the first cup is")],
        reasoner=[code('image_patch = ImagePatch(image)\ncups = image_patch.find("cup")'),
                  code('cup_color = cups[0].best_text_match(["red", "green", "blue"])\nfinal_answer = cup_color')],
        summarizer=[decide("continue"), decide("answer", "Red.")],
    )
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", max_steps=4)
    result = agent.run(str(photo("coffee")), "What color is the cup?")
    assert result.ok, result.error
    assert result.answer == "red"
    assert [s.decision for s in result.steps] == ["continue", "answer"]
    assert result.steps[0].instruction == "Find the cups"  # the most probable option
    assert "find('cup'): 1 found" in result.steps[0].feedback
    # Step 2's prompts saw step 1's variables and feedback.
    assert "cups" in script.seen["reasoner"][1] and "find('cup')" in script.seen["planner"][1]
    assert result.steps[1].guess == "red"


def test_execution_error_is_fed_back_and_retried(embedded_toolbox, sandbox, photo):
    script = RoleScript(
        planner=[plan("Count the cups")],
        reasoner=[code("n = len(cupz)"), code('cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))')],
        summarizer=[decide("answer", "1")],
    )
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=3).run(str(photo("coffee")), "How many cups?")
    step = result.steps[0]
    assert [a.ok for a in step.attempts] == [False, True]
    assert step.attempts[0].error_kind == "runtime"
    assert "cupz" in script.seen["reasoner"][1] and "failed" in script.seen["reasoner"][1]
    assert result.answer == "1"


def test_the_program_that_failed_is_not_run_again_in_the_step(embedded_toolbox, sandbox, photo):
    # a reasoner asked again wrote the very program that had failed (a loop that hit the tool-call
    # limit, twice: 1,003 LLM calls for one question); it is refused unrun, and the reasoner is not
    # asked a third time (the 1.5B wrote it again in 157 of 166 such steps): the fallback runs
    looping = code("n = len(cupz)")
    script = RoleScript(
        planner=[plan("Count the cups")],
        reasoner=[looping, looping, code('cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))')],
        summarizer=[decide("answer", "1")],
    )
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=3).run(str(photo("coffee")), "How many cups?")
    step = result.steps[0]
    assert [(a.error_kind, a.fallback) for a in step.attempts[:2]] == [("runtime", False), ("same", False)]
    assert "NameError" in step.attempts[1].error and "not run again" in step.attempts[1].error
    assert step.attempts[2].fallback and "cupz" not in step.attempts[2].code
    assert len(script.seen["reasoner"]) == 2  # the working third program was never asked for
    assert "NameError" in script.seen["reasoner"][1] and result.answer == "1"


def test_sandbox_tool_limits_come_from_the_config() -> None:
    from hydra_vr.config import load_config
    from hydra_vr.sandbox import Sandbox

    cfg = load_config("default", ["sandbox.max_tool_calls=7", "sandbox.max_tool_s=3.5"])
    sb = Sandbox(None, config=cfg.sandbox)
    assert (sb.max_tool_calls, sb.max_tool_s) == (7, 3.5)
    assert (Sandbox(None).max_tool_calls, Sandbox(None).max_tool_s) == (200, 120.0)
    with pytest.raises(Exception, match="greater than or equal to 1"):
        load_config("default", ["sandbox.max_tool_calls=0"])


def test_all_retries_fail_then_fallback_program(embedded_toolbox, sandbox, photo):
    script = RoleScript(
        planner=[plan("Count the cups")],
        reasoner=[code("import os"), code("open('x')")],
        final=[],
    )
    # The fallback program calls simple_query, which needs the LLM: the describe backend's own call
    # is not a loop role, so give the toolbox no LLM and expect the fallback to fail cleanly.
    agent = make_agent(script, embedded_toolbox, sandbox, max_steps=1, max_code_retries=1, mode="one_step")
    result = agent.run(str(photo("coffee")), "How many cups?")
    attempts = result.steps[0].attempts
    assert [a.error_kind for a in attempts[:2]] == ["policy", "policy"]
    assert attempts[-1].fallback
    assert "simple_query" in attempts[-1].code


class ReplanOnce:
    name = "replan_once"

    def __init__(self) -> None:
        self.calls = 0

    def select(self, options, probabilities, state):
        self.calls += 1
        return REPLAN if self.calls == 1 else len(options) - 1  # then the least probable


def test_replan_asks_the_planner_again(embedded_toolbox, sandbox, photo):
    script = RoleScript(
        planner=[plan("Find a giraffe", "Find a zebra"), plan("Find the cup", "Find a bowl")],
        reasoner=[code('bowls = ImagePatch(image).find("bowl")\nfinal_answer = "no"')],
        summarizer=[decide("answer", "no")],
    )
    controller = ReplanOnce()
    result = make_agent(script, embedded_toolbox, sandbox, controller=controller, mode="full").run(str(photo("coffee")), "Is there a bowl?")
    assert len(script.seen["planner"]) == 2
    assert result.steps[0].replans == 1 and result.steps[0].instruction == "Find a bowl"


def test_step_limit_merges_guesses(embedded_toolbox, sandbox, photo):
    script = RoleScript(
        planner=[plan("Find the cup"), plan("Check the saucer")],
        reasoner=[code('cups = ImagePatch(image).find("cup")\nfinal_answer = "cup"'), code('saucer = "plate"')],
        summarizer=[decide("continue"), decide("continue")],
        final=["Espresso cup."],
    )
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=2).run(str(photo("coffee")), "What is this?")
    assert len(result.steps) == 2
    assert result.answer == "espresso cup"
    assert "cup" in script.seen["final"][0]  # the guesses reached the merge prompt


def test_malformed_planner_output_is_parsed_or_retried(embedded_toolbox, sandbox, photo):
    prose = "Sure! Here are steps:\n1. Find the cup\n2. Find the saucer\n"
    script = RoleScript(
        planner=[prose],
        reasoner=[code('final_answer = str(len(ImagePatch(image).find("cup")))')],
        summarizer=[decide("answer", "1")],
    )
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=2).run(str(photo("coffee")), "How many cups?")
    assert result.steps[0].instruction == "Find the cup" and result.answer == "1"

    script = RoleScript(planner=["I cannot help", "still nothing useful"])
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=2).run(str(photo("coffee")), "How many cups?")
    assert not result.ok and "no usable instruction" in result.error


def test_grounding_returns_boxes_or_reports_no_box(embedded_toolbox, sandbox, photo):
    script = RoleScript(planner=[plan("Find the cup")], reasoner=[code('final_answer = ImagePatch(image).find("cup")[0]')])
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=2).run(str(photo("coffee")), "the cup", task="grounding")
    assert result.ok and len(result.boxes) == 1
    x1, y1, x2, y2 = result.boxes[0]
    assert 100 < x1 < x2 < 480 and y1 < y2

    # an expression that tells its thing from others (here by place) and whose names find nothing: no box
    script = RoleScript(
        planner=[plan("Find the giraffe"), plan("Find the zebra")],
        reasoner=[code('giraffes = ImagePatch(image).find("giraffe")'), code('zebras = ImagePatch(image).find("zebra")')],
    )
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=2).run(str(photo("coffee")), "the giraffe on the left",
                                                                            task="grounding")
    assert result.boxes == [] and "no box" in result.error
    assert "standout" not in result.steps[-1].code


def test_grounding_of_a_thing_no_tool_finds_ends_on_the_region_standing_out(embedded_toolbox, sandbox, photo):
    # nothing the expression names is found (no class, no classifier region, no likeliest box); it tells its thing
    # from no other, so the last resort takes what stands out from the photo's border: the cup and its saucer
    from hydra_vr.api.types import Box

    script = RoleScript(planner=[plan("Find the gadget")], reasoner=[code('gadgets = ImagePatch(image).find("gadget")')] * 3)
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=1).run(str(photo("coffee")), "the gadget", task="grounding")
    assert result.ok and result.answer_source == "fallback find" and len(result.boxes) == 1
    last = result.steps[-1]
    assert "standout()" in last.code and "region standing out" in last.observation
    # the cup on its saucer fills the middle of the photo; the box is that, not the whole photo
    box = Box(*result.boxes[0])
    assert box.iou(Box(0, 0, 600, 400)) < 0.8 and box.iou(Box(90, 0, 520, 400)) > 0.5
    # vipergpt ends on the same fallback program
    script = RoleScript(reasoner=[code('gadgets = ImagePatch(image).find("gadget")')] * 3)
    viper = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("coffee")), "the gadget", task="grounding")
    assert viper.ok and Box(*viper.boxes[0]).iou(box) > 0.99


def test_grounding_without_a_box_at_the_step_limit_tries_the_expressions_names(embedded_toolbox, sandbox, photo):
    script = RoleScript(
        planner=[plan("Find the saucer"), plan("Find the plate")],
        reasoner=[code('saucers = ImagePatch(image).find("saucer")'), code('plates = ImagePatch(image).find("plate")')],
    )
    result = make_agent(script, embedded_toolbox, sandbox, max_steps=2).run(str(photo("coffee")), "the saucer under the cup",
                                                                            task="grounding")
    assert result.ok and len(result.boxes) == 1 and result.answer_source == "fallback find"
    last = result.steps[-1]
    assert last.instruction.startswith("(fallback)") and last.boxes == result.boxes
    x1, y1, x2, y2 = result.boxes[0]
    assert 100 < x1 < x2 < 480 and y1 < y2  # the cup the expression names, found when 'saucer' has no class


def test_vipergpt_grounding_program_without_a_box_is_retried_with_the_reason(embedded_toolbox, sandbox, photo):
    script = RoleScript(reasoner=[code('final_answer = "coat"'), code('final_answer = ImagePatch(image).find("person")[0]')])
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("bus")), "the man on the left",
                                                                               task="grounding")
    assert result.ok and len(result.boxes) == 1
    attempts = result.steps[0].attempts
    assert [a.error_kind for a in attempts] == ["no_box", None]
    assert "must be the ImagePatch" in script.seen["reasoner"][1] and "'coat'" in script.seen["reasoner"][1]
    # asked for the object's ImagePatch, not for "a short string" nor to ask simple_query (a VQA program's ending)
    first = script.seen["reasoner"][0]
    assert "that object's ImagePatch, never to a string" in first and "short string" not in first


def test_vipergpt_grounding_falls_back_to_the_first_name_the_detector_finds(embedded_toolbox, sandbox, photo):
    script = RoleScript(reasoner=[code('final_answer = "cup"')] * 3)  # every retry (max_code_retries 2) sets text
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("coffee")), "the saucer under the cup",
                                                                               task="grounding")
    assert result.ok and len(result.boxes) == 1
    last = result.steps[0].attempts[-1]
    assert last.fallback and last.ok and "for name in ['saucer', 'cup']" in last.code
    assert "find('saucer'): no saucer found" in result.steps[0].observation  # no class: the next name was tried
    x1, y1, x2, y2 = result.boxes[0]
    assert 100 < x1 < x2 < 480 and y1 < y2  # the cup, not the whole photo


def test_a_grounding_program_that_returns_every_patch_is_grounded_to_the_one_the_expression_names(
        embedded_toolbox, sandbox, photo):
    script = RoleScript(reasoner=[code('final_answer = ImagePatch(image).find("person")')])
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(
        str(photo("bus")), "the pedestrian furthest to the right", task="grounding")
    people = embedded_toolbox.find(Image.open(photo("bus")).convert("RGB"), "person")
    rightmost = max(people, key=lambda d: d.box.x2).box.to_list()
    assert len(people) > 1 and result.ok and result.boxes == [pytest.approx(rightmost, abs=1)]
    assert "final_answer held" in result.steps[0].observation
    assert result.boxes != [pytest.approx(people[0].box.to_list(), abs=1)]  # not just the first, the most confident


def test_expression_names_try_two_word_names_first_and_colours_last_and_skip_positions():
    from hydra_vr.api.names import expression_names

    # colours come last, as regions of that colour ("region": "orange" alone is the detector's fruit)
    assert expression_names("the girl in the beige jacket") == ["girl", "jacket", "beige region"]
    assert expression_names("the big orange tulip") == ["tulip", "orange region"]
    # the outline adjective comes last, with its noun: find() looks for that by shape
    assert expression_names("the round traffic sign on the right") == ["traffic sign", "traffic", "sign", "round traffic sign"]
    assert expression_names("the round badge on his chest") == ["badge", "chest", "round badge"]
    assert expression_names("the cat's nose") == ["cat nose", "cat", "nose"]
    assert expression_names("the one on the left") == ["object"]


def test_vipergpt_and_no_sampling_modes(embedded_toolbox, sandbox, photo):
    script = RoleScript(reasoner=[code('final_answer = bool_to_yesno(ImagePatch(image).exists("cup"))')])
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("coffee")), "Is there a cup?")
    assert result.answer == "yes" and script.seen["planner"] == [] and script.seen["summarizer"] == []
    assert "answer (a short string)" in script.seen["reasoner"][0] and "ImagePatch, never" not in script.seen["reasoner"][0]

    script = RoleScript(planner=[plan("Check for a cup")], reasoner=[code('final_answer = bool_to_yesno(ImagePatch(image).exists("cup"))')],
                        summarizer=[decide("answer", "yes")])
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_sampling")
    result = agent.run(str(photo("coffee")), "Is there a cup?")
    assert result.answer == "yes"
    assert script.chat.calls[0].json_schema["properties"]["instructions"]["maxItems"] == 1


def test_bad_inputs(embedded_toolbox, sandbox, photo, tmp_path):
    agent = make_agent(RoleScript(), embedded_toolbox, sandbox)
    with pytest.raises(AgentInputError, match="empty"):
        agent.run(str(photo("coffee")), "  ")
    with pytest.raises(Exception, match="not found"):
        agent.run(str(tmp_path / "none.jpg"), "What?")
    with pytest.raises(AgentInputError, match="unknown task"):
        agent.run(str(photo("coffee")), "What?", task="caption")


def test_planner_parsing_edge_cases():
    out = parse_planner_output('```json\n{"instructions": [{"instruction": "Find the cat", "probability": 3}, '
                               '{"instruction": "find the  cat!", "probability": 1}, {"instruction": "Find the dog"}]}\n```\nHope this helps', 5)
    assert [o.instruction for o in out.options] == ["Find the cat", "Find the dog"]
    assert abs(sum(o.probability for o in out.options) - 1) < 1e-9
    assert out.options[0].probability > out.options[1].probability
    cut = '{"instructions": [{"instruction": "A", "probability": 0.5}, {"instruction": "B", "probability": 0.3}, {"instru'
    assert [o.instruction for o in parse_planner_output(cut, 5).options] == ["A", "B"]
    assert parse_planner_output('{"instructions": [], "answer": "two"}', 5).direct_answer == "two"
    assert len(parse_planner_output(plan(*"abcdefg"), 5).options) == 5
    # the compact reply the planner is asked for: [instruction, weight in percent] pairs, weights normalised
    pairs = parse_planner_output('{"instructions": [["Look for the kite", 60], ["Read the sign", 30], ["Look for the kite", 10]]}', 5)
    assert [(o.instruction, round(o.probability, 3)) for o in pairs.options] == [("Look for the kite", 0.667), ("Read the sign", 0.333)]
    cut_pairs = '{"instructions": [["Measure the sky", 70], ["Find the \\"tall\\" tower", 20], ["Cou'
    assert [o.instruction for o in parse_planner_output(cut_pairs, 5).options] == ["Measure the sky", 'Find the "tall" tower']
    assert extract_code("Here you go:\n```python\nx = 1\n```\nDone") == "x = 1"
    assert extract_code("x = 2") == "x = 2"


def test_planner_probability_controller_ties_and_empty():
    c = PlannerProbabilityController()
    assert c.select(["a", "b", "c"], [0.2, 0.5, 0.5], None) == 1
    assert c.select([], [], None) == REPLAN


def test_planner_answer_is_traced_and_trusted_only_without_new_options(embedded_toolbox, sandbox, photo):
    find_cups = code('cups = ImagePatch(image).find("cup")')
    # Step 2: the planner answers "3" but still proposes a step: the summarizer (who said continue)
    # stays the judge and the loop goes on. Step 3: an answer and no options ends the episode.
    script = RoleScript(
        planner=[plan("Find the cups"), plan("Count the cups", answer="3"), plan(answer="1")],
        reasoner=[find_cups, code("final_answer = str(len(cups))")],
        summarizer=[decide("continue"), decide("continue")],
    )
    result = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", max_steps=5).run(str(photo("coffee")), "How many cups?")
    assert result.ok and result.answer == "1"
    assert [s.decision for s in result.steps] == ["continue", "continue", "answer"]
    last = result.steps[-1]
    assert last.options == [] and last.attempts == [] and "planner answer: 1" in last.feedback


def test_find_feedback_names_what_the_detector_saw():
    from hydra_vr.api.types import Box, Detection, ToolCallRecord
    from hydra_vr.memory.textualizer import textualize_call

    bus = Detection(Box(15, 216, 793, 758), "bus", 0.79, "nanodet", query="vehicle")
    sign = Detection(Box(1, 2, 30, 40), "text", 0.9, "ocr", query="sign", text="STOP")
    line = textualize_call(ToolCallRecord("find", {"name": "vehicle"}, [bus, sign], 1.0))
    assert line == "find('vehicle'): 2 found: bus 0.79 at [15, 216, 793, 758]; text 'STOP' 0.90 at [1, 2, 30, 40]"
    assert textualize_call(ToolCallRecord("find", {"name": "unicorn"}, [], 1.0, {"mapping": "unicorn: not a COCO class"})) \
        == "find('unicorn'): no unicorn found (unicorn: not a COCO class)"


def test_repeated_steps_are_dropped_and_a_planner_stuck_on_them_ends_the_loop(embedded_toolbox, sandbox, photo):
    find_cups = code('cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))')
    script = RoleScript(
        # step 2: "Find the cups" again (any case or punctuation) is dropped, the other option runs
        planner=[plan("Find the cups"), plan("find the cups.", "Ask what color the cup is"),
                 # step 3: only repeats, twice (the replan too): nothing new, so the loop merges the guesses
                 plan("Find the cups", "Ask what color the cup is"), plan("Find the cups")],
        reasoner=[find_cups, code('final_answer = cups[0].best_text_match(["white", "red"])')],
        summarizer=[decide("continue"), decide("continue")],
        final=["1"],
    )
    result = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", max_steps=5, max_replans=1).run(
        str(photo("coffee")), "How many cups?")
    assert result.ok and result.answer == "1"
    assert [s.instruction for s in result.steps] == ["Find the cups", "Ask what color the cup is"]
    assert [o.instruction for o in result.steps[1].options] == ["Ask what color the cup is"]
    assert result.steps[1].options[0].probability == pytest.approx(1.0)
    assert not any(script.queues.values())  # every scripted reply was used: the replan happened


_FLOWER_PROGRAM = code('flowers = ImagePatch(image).find("bloom")\n'
                       'final_answer = flowers[0] if flowers else ImagePatch(image)')  # as the 1.5B wrote it


def test_grounding_to_the_whole_image_after_finding_nothing_is_no_box(photo):
    # "the big orange bloom": no tool has a class for "bloom", the program's else returned the whole photo
    # (Acc@0.5 0); that box grounds nothing, so the step ends without one and the fallback's names
    # ("bloom", then "orange region") find the flower
    import json

    from hydra_vr.api import VisionToolbox
    from hydra_vr.api.types import Box
    from hydra_vr.config import load_config
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.sandbox import Sandbox

    cfg = load_config("default")
    # best_image_match offline asks describe of each candidate; this LLM says yes to all (the first wins)
    votes = ScriptedChat(rules=[(r"Does this image show", json.dumps({"answer": "yes"}))])
    toolbox = VisionToolbox(cfg.vision, cache_dir=cfg.cache_path, llm=lambda: votes)
    flower = str(photo("flower"))
    with Sandbox(toolbox, timeout_s=20) as sb:
        script = RoleScript(planner=[plan("Find the flower")], reasoner=[_FLOWER_PROGRAM] * 3)
        result = make_agent(script, toolbox, sb, max_steps=1).run(flower, "the big orange bloom", task="grounding")
        assert result.steps[0].boxes == [] and result.answer_source == "fallback find"
        assert Box(*result.boxes[0]).iou(Box(169, 85, 446, 358)) > 0.9
        # vipergpt: retried with the reason, then the fallback program
        script = RoleScript(reasoner=[_FLOWER_PROGRAM] * 3)
        result = make_agent(script, toolbox, sb, mode="vipergpt").run(flower, "the big orange bloom", task="grounding")
    attempts = result.steps[0].attempts
    # the same program again is not run again (it would find nothing again), nor asked for a third time
    assert [a.error_kind for a in attempts[:-1]] == ["no_box", "same"] and attempts[-1].fallback
    assert "whole image because find('bloom') found nothing" in script.seen["reasoner"][1]
    assert Box(*result.boxes[0]).iou(Box(169, 85, 446, 358)) > 0.9


def test_a_list_of_things_the_program_never_looked_for_is_found_and_the_program_run_again(embedded_toolbox, sandbox, photo):
    # see hydra_vr/agent/program_repair.py: no second program is asked of the reasoner
    body = ('image_patch = ImagePatch(image)\nfinal_answer = str(len(mugs))')
    script = RoleScript(reasoner=[code(body)])
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("coffee")), "How many mugs sit on the table here?")
    step = result.steps[0]
    assert [a.error_kind for a in step.attempts] == ["unbound", None]
    assert "NameError: name 'mugs'" in step.attempts[0].error
    assert step.attempts[1].code.startswith("mugs = ImagePatch(image).find('mug')")
    assert len(script.seen["reasoner"]) == 1  # one program written: the repair asked nothing
    assert result.answer == "1"

def test_the_first_of_a_find_that_found_nothing_is_the_searched_patch_and_the_program_runs_on(embedded_toolbox, sandbox, photo):
    # see hydra_vr/agent/program_repair.py: told the IndexError, a small model writes the same [0] again
    body = ('image_patch = ImagePatch(image)\nzebra = image_patch.find("zebra")[0]\n'
            'final_answer = "yes" if zebra.exists("cup") else "no"')
    script = RoleScript(reasoner=[code(body)])
    result = make_agent(script, embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("coffee")), "Is a cup beside the zebra?")
    step = result.steps[0]
    assert [a.error_kind for a in step.attempts] == ["empty_find", None]
    assert "IndexError" in step.attempts[0].error
    assert 'zebra = (image_patch.find("zebra") or [image_patch])[0]' in step.attempts[1].code
    assert len(script.seen["reasoner"]) == 1  # one program written: the repair asked nothing
    assert result.answer == "yes"


def test_vipergpt_answer_glued_from_simple_query_replies_is_the_replies(embedded_toolbox, sandbox, photo, monkeypatch):
    # the 1.5B's program for a question like "What are the two players wearing?" glued its replies onto the question's words
    def simple_query(self, image, question, box=None, photo_size=None):  # the describe LLM's reply, fixed
        self._record("simple_query", {"question": question}, Answer(text="suit", source="test"), 0.0)
        return Answer(text="suit", source="test")

    monkeypatch.setattr(type(embedded_toolbox), "simple_query", simple_query)
    body = ('men = ImagePatch(image).find("person")\nfinal_answer = "Two players wearing"\n'
            'for man in men:\n    final_answer += man.simple_query("What is the man wearing?")')
    result = make_agent(RoleScript(reasoner=[code(body)]), embedded_toolbox, sandbox, mode="vipergpt").run(
        str(photo("zidane")), "What are the two players wearing?")
    assert result.steps[0].result["final_answer"] == "Two players wearingsuitsuit"
    assert result.answer == "suit"


def test_the_whole_question_option_stands_beside_the_planners_until_it_has_run(embedded_toolbox, sandbox, photo):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY, with_whole_query
    from hydra_vr.agent.types import Option

    script = RoleScript(
        planner=[plan("Find the mugs", "Ask what is on the saucer", "Find the spoon"), plan("Find the spoon")],
        reasoner=[code('mugs = ImagePatch(image).find("cup")\nfinal_answer = "mugs"'),  # no count: the loop goes on
                  code('spoons = ImagePatch(image).find("spoon")\nfinal_answer = str(len(spoons))')],
        summarizer=[decide("continue"), decide("answer", "1")],
    )
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3, hydra={"whole_query": 0.4})
    result = agent.run(str(photo("coffee")), "How many mugs can you count?")
    first, second = result.steps[0], result.steps[1]
    # N = 3: the whole question, then the planner's two most probable, scaled to the remaining 0.6
    assert [o.instruction for o in first.options] == [WHOLE_QUERY, "Find the mugs", "Ask what is on the saucer"]
    assert [o.probability for o in first.options] == pytest.approx([0.4, 0.6 * 3 / 5, 0.6 * 2 / 5])
    # written with the one-program prompt, as --strategy vipergpt writes it, not as a step of the loop
    assert first.instruction == WHOLE_QUERY and "answers the query completely" in script.seen["reasoner"][0]
    assert WHOLE_QUERY not in script.seen["reasoner"][0] and first.guess is None and first.decision == "continue"
    assert [o.instruction for o in second.options] == ["Find the spoon"]  # run once, not offered again
    # the planner fills the other N - 1 = 2 slots, so it is asked for exactly 2 (in its prompt and its reply's schema)
    asked = [c for c in script.chat.calls if c.json_schema and "instructions" in c.json_schema["properties"]]
    assert len(asked) == 2 and "exactly 2 different" in asked[0].messages[0].content
    assert {(c.json_schema["properties"]["instructions"]["minItems"], c.json_schema["properties"]["instructions"]["maxItems"])
            for c in asked} == {(2, 2)}
    shots = [json.loads(m.content) for m in asked[0].messages if m.role == "assistant"]
    assert shots and all(len(s["instructions"]) <= 2 and isinstance(s["instructions"][0], list) for s in shots)
    # off by default, and never the only option of mode no_sampling (N = 1) or beside a planner with none
    options = [Option("Find the mugs", 0.7), Option("Ask about the saucer", 0.3)]
    assert with_whole_query(options, 0.0, 5) == options
    assert with_whole_query(options, 0.5, 1) == options and with_whole_query([], 0.5, 5) == []


def test_the_whole_question_share_is_checked():
    from hydra_vr.agent.strategy import StrategyConfigError, build_strategy

    with pytest.raises(StrategyConfigError, match="whole_query"):
        build_strategy("hydra", {"whole_query": 1.5})


def test_a_typed_answer_to_the_whole_question_ends_the_episode_without_the_summarizer(embedded_toolbox, sandbox, photo):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY, picks_whole_regardless
    from hydra_vr.agent.types import Option
    from hydra_vr.controller.base import PlannerProbabilityController, RandomController

    script = RoleScript(planner=[plan("Find the mugs")],
                        reasoner=[code('cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))')])
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3, hydra={"whole_query": 0.5})
    result = agent.run(str(photo("coffee")), "How many mugs can you count?")
    assert len(result.steps) == 1 and result.steps[0].instruction == WHOLE_QUERY and result.steps[0].decision == "answer"
    assert result.answer == result.steps[0].guess and result.answer_source == "program"
    assert not script.seen.get("summarizer")  # never asked: it would only re-derive the program's answer
    # at 0.5 the planner-probability policy picks the whole question whatever the planner says: it is not asked
    assert not script.seen.get("planner") and result.steps[0].options == [Option(WHOLE_QUERY, 0.5)]
    # a learnt or wrapped controller always sees the planner's options
    assert not picks_whole_regardless(RandomController(0), 0.9, []) and not picks_whole_regardless(
        PlannerProbabilityController(), 0.5, [WHOLE_QUERY])

    # a step for part of the question still goes to the summarizer
    script = RoleScript(planner=[plan("Find the mugs")], summarizer=[decide("answer", "2")],
                        reasoner=[code('cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))')])
    result = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3).run(
        str(photo("coffee")), "How many mugs can you count?")
    assert result.answer_source == "summarizer" and len(script.seen["summarizer"]) == 1


def test_hydra_whole_question_grounding_step_without_a_box_runs_the_fallback_at_once(embedded_toolbox, sandbox, photo):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    empty = code('image_patch = ImagePatch(image)\nplates = image_patch.find("dinner plate")\n'
                 'final_answer = plates[0] if plates else image_patch')
    script = RoleScript(planner=[plan("Find the plate")], reasoner=[empty] * 3)
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3, hydra={"whole_query": 0.5})
    result = agent.run(str(photo("coffee")), "the dinner plate under the espresso cup", task="grounding")
    first = result.steps[0]
    assert first.instruction == WHOLE_QUERY and len(result.steps) == 1 and result.ok and len(result.boxes) == 1
    # told that the whole image grounds nothing, retried, then the expression's names in turn, as one program does
    assert [a.error_kind for a in first.attempts][0] == "no_box" and first.attempts[-1].fallback
    assert not script.seen.get("planner")
    x1, y1, x2, y2 = result.boxes[0]
    assert 100 < x1 < x2 < 480 and y1 < y2  # the cup the expression also names, not the whole photo


def test_hydra_grounding_stops_when_the_whole_question_step_and_the_names_found_nothing(embedded_toolbox, sandbox, photo):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    # nothing on the photo is a giraffe or a hay bale: the names' fallback finds nothing either
    empty = code('image_patch = ImagePatch(image)\ngiraffes = image_patch.find("giraffe")\n'
                 'final_answer = giraffes[0] if giraffes else image_patch')
    expression = "the giraffe beside the hay bale"
    script = RoleScript(planner=[plan("Find the giraffe")], reasoner=[empty] * 3)
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3, max_steps=4, hydra={"whole_query": 0.5})
    result = agent.run(str(photo("coffee")), expression, task="grounding")
    assert result.steps[0].instruction == WHOLE_QUERY and result.steps[0].attempts[-1].fallback
    assert result.boxes == [] and "names in turn found nothing" in result.error
    assert not script.seen.get("planner")  # no plan asked for: the episode ended after its first step
    assert result.steps[-1].instruction.startswith("(fallback)")  # the names' last resort, as at the step limit

    # switched off, the planner's steps go on searching
    script = RoleScript(planner=[plan("Find the giraffe"), plan("Find the hay")], reasoner=[empty] * 3 + [
        code('hay = ImagePatch(image).find("hay")'), code('bales = ImagePatch(image).find("bale")')],
        summarizer=[decide("continue")] * 2)
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3, max_steps=3,
                       hydra={"whole_query": 0.5, "stop_unfound": False})
    result = agent.run(str(photo("coffee")), expression, task="grounding")
    assert len(script.seen["planner"]) >= 1 and result.boxes == [] and "step limit" in result.error


class _DecidesFirst:
    """A controller trained on the whole-first decision: answers it with ``first``, then picks ``then``."""

    name = "decides-first"
    whole_first = True

    def __init__(self, first: int, then: int = 1) -> None:
        self.first, self.then, self.seen = first, then, []

    def select(self, options, probabilities, state):
        self.seen.append((list(options), list(probabilities), state.replans, state.max_replans))
        return self.first if len(self.seen) == 1 else self.then


def test_a_controller_trained_to_decide_first_is_asked_before_the_planner(embedded_toolbox, sandbox, photo):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY
    from hydra_vr.controller.base import REPLAN

    count = code('cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))')
    # it takes the whole question: the planner is never asked (no plan is paid for)
    script = RoleScript(planner=[plan("Find the mugs", "Find the saucer")], reasoner=[count])
    first = _DecidesFirst(first=0)
    agent = make_agent(script, embedded_toolbox, sandbox, controller=first, mode="full", num_options=3, max_replans=0,
                       hydra={"whole_query": 0.3})
    result = agent.run(str(photo("coffee")), "How many mugs can you count?")
    assert not script.seen.get("planner") and result.steps[0].instruction == WHOLE_QUERY and result.answer
    # it saw the whole question alone, with its share, and asking the planner open although no replan is left
    assert first.seen == [([WHOLE_QUERY], [0.3], 0, 1)]

    # it asks for a plan (REPLAN): the planner's options, with the whole question among them, are its next choice
    script = RoleScript(planner=[plan("Find the mugs", "Find the saucer")], reasoner=[count], summarizer=[decide("answer", "1")])
    planning = _DecidesFirst(first=REPLAN, then=1)
    agent = make_agent(script, embedded_toolbox, sandbox, controller=planning, mode="full", num_options=3,
                       hydra={"whole_query": 0.3})
    result = agent.run(str(photo("coffee")), "How many mugs can you count?")
    assert len(script.seen["planner"]) == 1 and planning.seen[1][0] == [WHOLE_QUERY, "Find the mugs", "Find the saucer"]
    assert result.steps[0].instruction == "Find the mugs" and result.answer == "1"
    # without the whole question offered there is nothing to decide first
    script = RoleScript(planner=[plan("Find the mugs")], reasoner=[count], summarizer=[decide("answer", "1")])
    plain = _DecidesFirst(first=0, then=0)
    make_agent(script, embedded_toolbox, sandbox, controller=plain, mode="full", num_options=3).run(
        str(photo("coffee")), "How many mugs can you count?")
    assert plain.seen[0][0] == ["Find the mugs"] and len(script.seen["planner"]) == 1


def test_a_failed_whole_question_program_runs_the_fallback_then_leaves_the_question_to_the_next_step(
        embedded_toolbox, sandbox, photo):
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    broken = code("final_answer = len(saucers)")  # a NameError, written twice: not run a third time
    script = RoleScript(planner=[plan("Find the mugs")], summarizer=[decide("continue"), decide("answer", "1")],
                        reasoner=[broken, broken, code('cups = ImagePatch(image).find("cup")\nfinal_answer = str(len(cups))')])
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3, hydra={"whole_query": 0.5})
    result = agent.run(str(photo("coffee")), "How many mugs can you count?")
    first = result.steps[0]
    # the fallback's whole-image query needs the describe backend's LLM, which this toolbox lacks: no answer there
    assert first.instruction == WHOLE_QUERY and first.guess is None and first.decision == "continue"
    assert first.attempts[-1].fallback and not first.attempts[-1].ok
    assert [s.instruction for s in result.steps] == [WHOLE_QUERY, "Find the mugs"] and result.answer == "1"


def test_a_whole_question_program_whose_fallback_answers_ends_as_one_program_does(embedded_toolbox, sandbox, photo):
    # a place question: the fallback's simple_query answers it from the cup's box, no LLM needed
    from hydra_vr.agent.strategies.hydra import WHOLE_QUERY

    broken = code("final_answer = len(saucers)")
    question = "Is the cup in the middle or at the edge of the picture?"
    one = make_agent(RoleScript(reasoner=[broken, broken]), embedded_toolbox, sandbox, mode="vipergpt")
    expected = one.run(str(photo("coffee")), question).answer
    script = RoleScript(planner=[plan("Find the mugs")], reasoner=[broken, broken], summarizer=[decide("continue")])
    result = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3,
                        hydra={"whole_query": 0.5}).run(str(photo("coffee")), question)
    assert expected in ("middle", "edge") and result.answer == expected
    assert [s.instruction for s in result.steps] == [WHOLE_QUERY] and result.steps[0].attempts[-1].fallback
    assert not script.seen.get("planner") and not script.seen.get("summarizer")


def test_a_yes_to_is_anyone_with_no_person_found_is_rewritten_to_no(embedded_toolbox, sandbox, photo):
    # the program answers from the cup it found; one more find("person") in the real photo finds no one
    program = code('cups = ImagePatch(image).find("cup")\nfinal_answer = bool_to_yesno(len(cups) > 0)')
    question = "Is anybody sipping from the cup?"
    # the rewrite alone (the checks that refuse a yes resting on the cup's find alone switched off)
    agent = HydraAgent(AgentConfig(mode="vipergpt"), RoleScript(reasoner=[program]).chat, embedded_toolbox, sandbox,
                       disabled_checks=["existence_for_state", "presence_unsearched"])
    result = agent.run(str(photo("coffee")), question)
    assert result.ok, result.error
    assert result.answer == "no"
    assert [(c["check"], c["answer"], c.get("to")) for c in result.checks] == [("nobody_there", "yes", "no")]
    assert 'find("person") found no one' in result.steps[0].feedback
    # with them, the yes is refused first (a presence question about a person: the cup's find shows none); no one is
    # there, so the answer is still no
    both = make_agent(RoleScript(reasoner=[program]), embedded_toolbox, sandbox, mode="vipergpt").run(str(photo("coffee")), question)
    assert both.answer == "no" and [c["check"] for c in both.checks] == ["presence_unsearched", "nobody_there"]
    # switched off by name, the program's own answer stands
    off = HydraAgent(AgentConfig(mode="vipergpt"), RoleScript(reasoner=[program]).chat, embedded_toolbox, sandbox,
                     disabled_checks=["nobody_there", "existence_for_state", "presence_unsearched"])
    assert off.run(str(photo("coffee")), question).answer == "yes"


def test_grounding_whose_names_find_nothing_ends_on_the_detectors_likeliest_box(embedded_toolbox, sandbox, photo):
    from hydra_vr.agent.roles import fallback_program

    # an expression names a thing that is there: where no tool finds anything for its names, the fallback's
    # second pass takes the detector's likeliest box below its threshold, and says it was presumed
    assert "presumed=True" in fallback_program("the mug on the desk", "grounding")
    empty = code('image_patch = ImagePatch(image)\nmugs = image_patch.find("cup")\n'
                 'final_answer = mugs[0] if mugs else image_patch')
    script = RoleScript(planner=[plan("Find the mug")], reasoner=[empty] * 3)
    agent = make_agent(script, embedded_toolbox, sandbox, mode="no_rl", num_options=3, hydra={"whole_query": 0.5})
    image = photo("astronaut")
    result = agent.run(str(image), "the mug on the desk", task="grounding")
    [likeliest] = embedded_toolbox.backend("detector").likeliest(Image.open(image).convert("RGB"), ["cup"])
    assert result.ok and result.boxes == [likeliest.box.to_list()]
    assert "presumed there" in result.steps[0].observation and result.steps[0].attempts[-1].fallback


def test_only_an_expression_of_one_thing_told_from_no_other_ends_on_the_region_standing_out():
    from hydra_vr.agent.roles import fallback_program
    from hydra_vr.api.choose import names_one_thing

    assert names_one_thing("the teapot") and names_one_thing("a wooden canoe")
    # told from others by place, by a colour worn, or by another thing after it: not the photo's subject
    for told in ("the teapot on the right", "the smallest canoe", "the woman in the yellow scarf", "the spout of the teapot",
                 "the canoe beside the pier", "the boy holding a kite"):
        assert not names_one_thing(told), told
    # only the episode's last resort takes it: a step's fallback leaves the next step to search
    assert "standout()" in fallback_program("the teapot", "grounding", last_resort=True)
    assert "standout()" not in fallback_program("the teapot", "grounding")
    assert "standout()" not in fallback_program("the teapot on the right", "grounding", last_resort=True)
