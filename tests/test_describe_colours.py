"""The colour of a thing no tool located: the describe backend says so and lets the LLM judge, rather than
keeping the answer to the rest of the photo's colours; a thing any tool finds gets its own colours."""

from __future__ import annotations

import json

from PIL import Image


def _describe(toolbox, replies: list[str]):
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.question import parse

    chat = ScriptedChat(responses=[json.dumps({"answer": r}) for r in replies])
    return DescribeVQA(ToolContext(toolbox=toolbox, llm=lambda: chat, read_question=parse)), chat


def test_an_unlocated_things_colour_is_not_kept_to_the_photos(embedded_toolbox, photo) -> None:
    cat = Image.open(photo("chelsea")).convert("RGB")
    d, chat = _describe(embedded_toolbox, ["green"])
    # no pixel of the cat photo is green: kept to the measured colours this reply would be refused
    assert "green" not in " ".join(d.describe(cat, "What colour is the doormat?", True)["colors"])
    got = d.answer(cat, "What colour is the doormat?", whole=True)
    assert got.text == "green" and len(chat.calls) == 1
    assert "No tool located the doormat: these colours are the photo's" in chat.calls[0].last_user
    assert "likely subject" not in chat.calls[0].last_user


def test_a_crop_keeps_its_own_colours(embedded_toolbox, photo) -> None:
    # a patch the program cropped is taken to hold the thing: its colours stand, no "not located" line
    cat = Image.open(photo("chelsea")).convert("RGB")
    crop = cat.crop((100, 50, 350, 300))
    findings = _describe(embedded_toolbox, [])[0].describe(crop, "What colour is the doormat?", False)
    assert findings["unlocated"] is None


def test_a_thing_the_classifier_finds_gets_its_own_colours(embedded_toolbox, photo) -> None:
    # no detector class names it; the classifier's regions find it, and colours are measured in that box
    coffee = Image.open(photo("coffee")).convert("RGB")
    findings = _describe(embedded_toolbox, [])[0].describe(coffee, "What colour is the espresso?", True)
    assert findings["unlocated"] is None
    (thing,) = findings["relevant"]
    assert thing["label"] == "espresso" and thing["colors"]
    x1, y1, x2, y2 = thing["box"]
    assert 0 <= x1 < x2 <= coffee.width and 0 <= y1 < y2 <= coffee.height
    assert (x2 - x1) * (y2 - y1) < coffee.width * coffee.height  # a region, not the whole photo


def test_a_photo_the_classifier_names_for_the_thing_keeps_its_colours(embedded_toolbox) -> None:
    # nothing cut out for it, but the whole photo is classified as a kind of the thing: the photo shows it
    from hydra_vr.api.types import LabelScore

    plain = Image.new("RGB", (160, 120), (120, 90, 60))
    d = _describe(embedded_toolbox, [])[0]
    assert embedded_toolbox.look_for(plain, "cat")[0] == []
    assert d._locate(plain, "What colour is the cat?", [LabelScore("Egyptian cat", 0.6)], True) == (None, None)
    assert d._locate(plain, "What colour is the cat?", [LabelScore("teapot", 0.6)], True) == (None, "cat")
