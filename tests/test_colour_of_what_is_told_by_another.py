"""The colour of a thing the question tells by another (the one it sits on, the one holding it): the other thing's
colours are not listed as the thing's own."""

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


def test_another_thing_the_question_names_lends_the_thing_no_colours() -> None:
    person = ("person", [150.0, 40.0, 250.0, 250.0])
    d, chat = _describe([person], "green")
    d.answer(_room(), "What colour is the crate beside the woman?")
    prompt = chat.calls[0].last_user
    assert "About what the question names" not in prompt  # the woman's colours are not listed as the crate's
    assert "- person (score 0.70)" in prompt  # she is still among the objects detected
    # a question about the person herself still lists her, with her own colours
    d, chat = _describe([person], "blue")
    d.answer(_room(), "What colour is the woman?")
    assert "About what the question names" in chat.calls[0].last_user
    # a part of her ("the woman's scarf") is measured within her, as before
    d, chat = _describe([person], "blue")
    d.answer(_room(), "What colour is the woman's scarf?")
    assert "About what the question names" in chat.calls[0].last_user
