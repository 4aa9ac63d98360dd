"""The colour of a thing no tool locates in a scene: the photo's colours down to their small shares, and the colours
of another thing the question names (the one it sits on, the one holding it) are not its own."""

from __future__ import annotations

import json

from PIL import Image, ImageDraw


class _Detector:
    """A detector whose listing holds some fixed detections and whose search by name finds nothing (a fake tool: these
    tests are about which colours the findings give the LLM, not detection)."""

    def __init__(self, found: list[tuple[str, list[float]]]) -> None:
        self.found = found

    def detect_classes(self, image: Image.Image) -> list:
        from hydra_vr.api.types import Box, Detection

        return [Detection(Box(*box), label, 0.7, "fake") for label, box in self.found]

    def detect(self, image: Image.Image, queries) -> list:
        return []


def _describe(detections: list[tuple[str, list[float]]], reply: str):
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.config import HydraConfig
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.question import parse

    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _Detector(detections)
    chat = ScriptedChat(responses=[json.dumps({"answer": reply})] * 4)
    return DescribeVQA(ToolContext(toolbox=tb, llm=lambda: chat, read_question=parse)), chat


def _room() -> Image.Image:
    """A grey room, a dark-blue figure standing in it, and a small green box (3% of the photo) at its feet."""
    room = Image.new("RGB", (400, 300), (120, 120, 122))
    draw = ImageDraw.Draw(room)
    draw.rectangle((150, 40, 250, 250), fill=(20, 30, 110))
    draw.rectangle((250, 225, 290, 275), fill=(30, 170, 60))
    return room


def test_a_thing_no_tool_locates_may_have_any_of_the_photos_colours() -> None:
    d, chat = _describe([], "green")
    got = d.answer(_room(), "What colour is the crate?")
    assert got.text == "green"
    enum = chat.calls[0].json_schema["properties"]["answer"]["enum"]
    assert "green" in enum  # 3% of the photo: under the share the answer was kept to before
    assert "The question asks about the crate, which no tool located in the photo" in chat.calls[0].last_user


def test_another_thing_the_question_names_lends_the_thing_no_colours() -> None:
    person = ("person", [150.0, 40.0, 250.0, 250.0])
    d, chat = _describe([person], "green")
    d.answer(_room(), "What colour is the crate beside the woman?")
    prompt = chat.calls[0].last_user
    assert "About what the question names" not in prompt  # the woman's colours are not listed as the crate's
    assert "which no tool located in the photo" in prompt
    # a question about the person herself still lists her, with her own colours
    d, chat = _describe([person], "blue")
    d.answer(_room(), "What colour is the woman?")
    assert "About what the question names" in chat.calls[0].last_user
    assert "no tool located" not in chat.calls[0].last_user


def test_a_crop_of_the_thing_and_the_photo_itself_are_measured_as_before() -> None:
    from hydra_vr.api.types import mark_object_crop

    d, chat = _describe([], "green")
    d.answer(mark_object_crop(_room().crop((250, 225, 290, 275))), "What colour is the crate?")
    assert "no tool located" not in chat.calls[0].last_user  # a program's crop of it: its own pixels are the crate's
    d, chat = _describe([], "grey")
    d.answer(_room(), "What colour is the picture?")
    assert "no tool located" not in chat.calls[0].last_user
