"""What people wear, by body part: the question's part, where it lies, and the real classifier on it."""

from __future__ import annotations

import pytest
from PIL import Image

from hydra_vr.api import garments


@pytest.mark.parametrize("question, part", [
    ("What is she wearing on her head?", "head"),
    ("Is she wearing her helmet?", "head"),
    ("What color is the hair of the man on the right?", "head"),
    ("What is the man in the black coat wearing on his face?", "face"),  # the part asked, not the coat
    ("How many men are wearing sunglasses?", "face"),
    ("Is she wearing glasses?", "face"),
    ("What is hanging around his neck?", "neck"),
    ("What color is his tie?", "neck"),
    ("What does he have on his feet?", "feet"),
    ("Are her shoes red?", "feet"),
    ("Is he wearing jeans or shorts?", "legs"),
    ("What is the bearded man wearing over his shirt?", "body"),
    ("What color is her uniform jacket?", "body"),
    ("What is she wearing?", "body"),
    ("How is the boy dressed?", "body"),
])
def test_the_part_a_question_asks_about(question, part):
    assert garments.worn_part(question) == part


@pytest.mark.parametrize("question", [
    "What color is the bus?", "How many people can you see?", "Is the cup full or empty?",
    "What is on top of the cake?", "Who is the bald man?", "Where is the spoon?",
])
def test_questions_about_no_garment(question):
    assert garments.worn_part(question) is None


def test_every_garment_is_an_imagenet_class_of_a_known_part():
    # (and the classes given to dark suits and uniforms on the sample photos are left out)
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    labels = {info.index_to_description(i).split(",")[0].strip() for i in range(1000)}
    assert set(garments.GARMENTS) <= labels
    assert {part for part, _ in garments.GARMENTS.values()} <= set(garments.PARTS)
    assert garments.garment("sombrero", "head") == "hat"
    assert garments.garment("sombrero", "face") is None  # worn elsewhere
    assert garments.garment("tabby", "body") is None  # no garment
    assert not {"academic gown", "mortarboard", "vestment"} & set(garments.GARMENTS)


def test_part_boxes_from_the_face_and_from_the_person():
    person, face = [100, 100, 300, 700], [170, 130, 230, 200]  # a standing person; the face 60 x 70
    assert garments.face_of(person, [[0, 0, 20, 20], face, [150, 600, 200, 650]]) == face  # in the upper half
    assert garments.face_of(person, [[150, 600, 200, 650]]) is None
    head = garments.part_box(person, "head", face, (1000, 1000))
    assert head[3] < face[3] and head[1] < face[1]  # above the face, down to its brow
    neck = garments.part_box(person, "neck", face, (1000, 1000))
    assert neck[1] > face[1] + 0.5 * (face[3] - face[1])  # below the face
    body = garments.part_box(person, "body", face, (1000, 1000))
    assert body[0] == 100 and body[2] == 300 and body[1] == 200 and body[3] < 700  # from the chin down to the waist
    # no face: shares of the person's box; the feet at its bottom
    assert garments.part_box(person, "feet", None, (1000, 1000)) == [100, 610, 300, 700]
    assert garments.part_box(person, "head", None, (1000, 1000))[1] == 100
    # clipped to the image, and nothing for a part under 8 pixels
    assert garments.part_box([0, 0, 100, 300], "head", [5, 5, 40, 40], (1000, 1000))[:2] == [0, 0]
    assert garments.part_box([0, 0, 20, 20], "face", None, (1000, 1000)) is None


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


@pytest.mark.parametrize("text, told", [
    ("the man in the black coat", ("body", ("black",))),
    ("the man with gray hair", ("head", ("gray",))),
    ("the woman in the orange suit", ("body", ("orange",))),
    ("the man in the beige coat", ("body", ("brown",))),  # beige reads brown in the pixels
    ("the girl in pink", ("body", ("pink",))),
    ("the boy dressed in all black", ("body", ("black",))),
    ("the red motorcycle", None),
    ("the blue bus", None),
    ("a dog in a red collar", None),
    ("the woman in uniform", None),  # a garment, but no colour
    ("the red hat", None),  # the garment itself, not a person told by it
    ("the woman wearing a red hat", ("head", ("red",))),
])
def test_descriptions_that_tell_a_person_by_the_colour_they_wear(text, told):
    assert garments.worn_colors(text) == told


def _gt(qid: str):
    import json
    from pathlib import Path

    from hydra_vr.api.types import Box

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "real_photos" / "questions.jsonl"
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
