"""What people wear, by body part: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_garments.py.
"""

from __future__ import annotations

import pytest
from PIL import Image

from hydra_vr.api import garments


@pytest.fixture(scope="module")
def describe(embedded_toolbox):
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext

    return DescribeVQA(ToolContext(toolbox=embedded_toolbox, llm=None))


def test_a_hat_on_the_real_portrait(describe, photo):
    # the whole portrait's classifier guesses name no hat; her head, above the found face, does
    image = Image.open(photo("grace_hopper")).convert("RGB")
    worn = describe.describe(image, "What is she wearing on her head?")["worn"]
    assert worn["part"] == "head" and len(worn["people"]) == 1  # the sliver of a second "person" is skipped
    assert worn["people"][0]["garments"][0].startswith("hat (sombrero)")
    assert worn["people"][0]["box"][3] < image.height // 3


def test_sunglasses_on_the_face_of_one_of_four_men(describe, photo):
    image = Image.open(photo("bus")).convert("RGB")
    worn = describe.describe(image, "What is the man in the black coat wearing on his face?")["worn"]
    assert worn["part"] == "face" and len(worn["people"]) == 3  # the three largest people
    said = [g for p in worn["people"] for g in p["garments"]]
    assert any(g.startswith("sunglasses") for g in said)
    assert not any("tie" in g for g in said)  # the crop's top class (a Windsor tie) is worn elsewhere


def test_garment_colours_and_the_placed_person_first(describe, photo):
    from hydra_vr.prompts import render_prompt

    image = Image.open(photo("grace_hopper")).convert("RGB")
    findings = describe.describe(image, "What color is her uniform jacket?")
    person = findings["worn"]["people"][0]
    assert person["colors"][0].startswith("black")  # the navy uniform below her face
    assert findings["subject_colors"] is None  # the portrait's stand-out colour is her face: not stated
    text = render_prompt("vqa_describe_user", **findings, expected="a colour")
    assert "on each person's body" in text and "colours black" in text
    # "the man on the right": the right one of the two men first, his hair read above his face
    image = Image.open(photo("zidane")).convert("RGB")
    worn = describe.describe(image, "What color is the hair of the man on the right?")["worn"]
    first = worn["people"][0]
    assert first["person"][0] > image.width // 2
    assert first["colors"][0].split()[0] in ("gray", "white")
    # a question about no garment adds nothing; nor does a count (weak scores under-count)
    assert describe.describe(image, "Who is the bald man?")["worn"] is None
    assert describe.describe(image, "How many ties can you see?")["worn"] is None


def _gt(qid: str):
    import json
    from pathlib import Path

    from hydra_vr.api.types import Box

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "real_photos" / "questions.jsonl"
    return Box(*next(r for r in map(json.loads, path.read_text().splitlines()) if r["id"] == qid)["box"])


def test_the_coat_colour_picks_one_of_four_men_on_the_real_photo(Patch, photo):
    # the embedded toolbox has no LLM: a look at each crop would raise, so the pixels alone decide
    from hydra_vr.api.helpers import best_image_match

    people = Patch(Image.open(photo("bus"))).find("person")
    assert len(people) == 4
    black = best_image_match(people, ["the man in the black coat"])
    assert black._box().iou(_gt("bus-g-2")) >= 0.5
    assert best_image_match(people, ["the man in the beige coat"])._box().iou(_gt("bus-g-1")) >= 0.5
    crops = [p.cropped_image for p in people]
    # a colour no one wears there does not tell: no pick (the caller asks otherwise)
    assert garments.pick_worn(crops, "body", ("green",)) is None
    assert garments.pick_worn(crops[:1], "body", ("black",)) is None  # one person: nothing to choose


@pytest.mark.parametrize("mode", ["vipergpt", "no_rl"])
def test_a_grounding_step_takes_the_person_in_the_coat_colour(embedded_toolbox, photo, mode):
    # the 1.5B's program took men[0] (the most confident) for "the man in the black coat"
    import json

    from hydra_vr.agent.loop import HydraAgent
    from hydra_vr.config import AgentConfig
    from hydra_vr.sandbox import Sandbox
    from tests.test_agent_loop import RoleScript, code, plan

    first = code('men = ImagePatch(image).find("man")\nfinal_answer = men[0]')
    with Sandbox(embedded_toolbox, timeout_s=20) as sb:
        script = RoleScript(planner=[plan("Find the man in the black coat")], reasoner=[first],
                            summarizer=[json.dumps({"decision": "answer", "answer": ""})])
        agent = HydraAgent(AgentConfig(mode=mode, max_steps=1), script.chat, embedded_toolbox, sb)
        result = agent.run(str(photo("bus")), "the man in the black coat", task="grounding")
    from hydra_vr.api.types import Box

    assert Box(*result.boxes[0]).iou(_gt("bus-g-2")) >= 0.5
    assert "black on the body" in result.steps[0].feedback and "grounded to it" in result.steps[0].feedback
