"""Picking a patch by where the description places it: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_placement.py.
"""

from __future__ import annotations

import json

import pytest

from hydra_vr.api.types import Box


def _gt(qid: str) -> Box:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "real_photos" / "questions.jsonl"
    row = next(r for r in map(json.loads, path.read_text().splitlines()) if r["id"] == qid)
    return Box(*row["box"])


def test_best_image_match_places_people_on_a_real_photo_without_a_model(Patch, photo) -> None:
    # the embedded toolbox has no LLM: a look at each crop would raise, so the boxes alone decide
    from hydra_vr.api.helpers import best_image_match
    from PIL import Image

    people = Patch(Image.open(photo("bus"))).find("person")
    assert len(people) >= 3
    right = best_image_match(people, ["the person walking on the far right"])
    left = best_image_match(people, ["the person cut off at the left edge"])
    assert right._box().iou(_gt("bus-g-3")) >= 0.5
    assert left._box().iou(_gt("bus-g-4")) >= 0.5
    assert best_image_match(people, ["the person on the right"], return_index=True) == people.index(right)


def _agent(script, toolbox, sandbox, **cfg):
    from hydra_vr.agent.loop import HydraAgent
    from hydra_vr.config import AgentConfig

    return HydraAgent(AgentConfig(**cfg), script.chat, toolbox, sandbox)


@pytest.mark.parametrize("mode", ["vipergpt", "no_rl"])
def test_a_grounding_step_takes_the_placed_patch_of_its_find(embedded_toolbox, photo, mode: str) -> None:
    # the program took people[-1] (the last by score) for "the far right"; the step grounds the
    # rightmost of the same find() and says so; a program that sorted by place is left alone
    from hydra_vr.sandbox import Sandbox
    from tests.test_agent_loop import RoleScript, code, plan

    bus = str(photo("bus"))
    by_score = code('people = ImagePatch(image).find("person")\nfinal_answer = people[-1]')
    by_place = code('people = ImagePatch(image).find("person")\nfinal_answer = sort_patches_left_to_right(people)[-1]')
    with Sandbox(embedded_toolbox, timeout_s=20) as sb:
        script = RoleScript(planner=[plan("Find the person on the far right")], reasoner=[by_score],
                            summarizer=[json.dumps({"decision": "answer", "answer": ""})])
        result = _agent(script, embedded_toolbox, sb, mode=mode, max_steps=1).run(bus, "the person walking on the far right", task="grounding")
        assert Box(*result.boxes[0]).iou(_gt("bus-g-3")) >= 0.5
        assert "the expression says 'right'" in result.steps[0].feedback and "grounded to it" in result.steps[0].feedback
        script = RoleScript(planner=[plan("Find the person on the far right")], reasoner=[by_place],
                            summarizer=[json.dumps({"decision": "answer", "answer": ""})])
        result = _agent(script, embedded_toolbox, sb, mode=mode, max_steps=1).run(bus, "the person walking on the far right", task="grounding")
        assert Box(*result.boxes[0]).iou(_gt("bus-g-3")) >= 0.5 and "grounded to it" not in result.steps[0].feedback
        # no place named (nor a colour worn): the program's own pick stands
        script = RoleScript(planner=[plan("Find the man")], reasoner=[by_score],
                            summarizer=[json.dumps({"decision": "answer", "answer": ""})])
        result = _agent(script, embedded_toolbox, sb, mode=mode, max_steps=1).run(bus, "a man waiting for the bus", task="grounding")
        assert "grounded to it" not in result.steps[0].feedback
        assert Box(*result.boxes[0]).iou(_gt("bus-g-4")) >= 0.5  # people[-1] is the cut-off person


def test_describe_groups_the_coins_into_rows(embedded_toolbox, photo) -> None:
    # "How many rows of coins are there?" (4) and "How many coins are in the top row?" (6): the 24 circles
    # found by outline, grouped by height, are stated for the LLM
    from PIL import Image

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.prompts import render_prompt

    d = DescribeVQA(ToolContext(toolbox=embedded_toolbox, llm=None))
    coins = Image.open(photo("coins")).convert("RGB")
    findings = d.describe(coins, "How many coins are in the top row?")
    assert findings["rows"]["counts"] == [6, 6, 6, 6] and findings["rows"]["what"] == "shapes"
    assert findings["shapes_total"] == 24 and len(findings["shapes"]) == 12  # all are grouped and counted, 12 listed
    shown = render_prompt("vqa_describe_user", **findings, expected="a number")
    assert "lie in 4 rows (top to bottom) of 6, 6, 6, 6" in shown and "outline (24; the first 12 listed)" in shown
    assert d.describe(coins, "How many coins are there?")["rows"] is None  # only when rows are asked about
    assert d.describe(coins, "Which row has the biggest coin?")["rows"]["counts"] == [6, 6, 6, 6]
    assert d.describe(coins, "What color are the columns of coins?")["rows"] is None  # a colour, not a grouping


def test_group_into_rows_on_the_real_coins_through_the_sandbox(embedded_toolbox, photo) -> None:
    # the program the reasoner can now write for "How many coins are in the top row?" (6) and "How many
    # rows of coins are there?" (4); the 1.5B's own grouping had answered 1 and 11
    from hydra_vr.sandbox import Sandbox

    program = ('coins = ImagePatch(image).find("coin")\n'
               'rows = group_into_rows(coins)\n'
               'columns = group_into_rows(coins, columns=True)\n'
               'final_answer = [len(rows), len(rows[0]), sum(len(c) for c in columns), rows[0][0].x1 <= rows[0][1].x1,'
               ' rows[0][0].vertical_center < rows[-1][0].vertical_center,'
               ' columns[0][0].horizontal_center < columns[-1][0].horizontal_center]')
    with Sandbox(embedded_toolbox, timeout_s=20) as sb:
        res = sb.run(program, str(photo("coins")))
    assert res.ok, res.error
    # the rows are offset sideways, so the columns are not a clean grid: every coin is in one, left first
    assert res.final_answer == [4, 6, 24, True, True, True]
