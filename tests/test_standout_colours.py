"""The colour of a thing no tool locates, where what stands out in the photo is another thing (the classifier says
which): the photo's other colours may answer too, not only the standout's."""

from __future__ import annotations

import json

from PIL import Image, ImageDraw

from hydra_vr.api.types import LabelScore


class _NamesTheBlob:
    """A classifier that calls any photo a fox (a fake tool: this tests which colours an answer is kept to)."""

    def classify(self, images, top_k: int = 5) -> list[list[LabelScore]]:
        return [[LabelScore("red fox", 0.8), LabelScore("kit fox", 0.1)] for _ in images]


class _SeesNothing:
    def detect_classes(self, image: Image.Image) -> list:
        return []

    def detect(self, image: Image.Image, queries) -> list:
        return []


def _field() -> Image.Image:
    """Green grass over the whole photo and an orange blob in its middle."""
    scene = Image.new("RGB", (400, 300), (60, 150, 50))
    ImageDraw.Draw(scene).ellipse((140, 90, 260, 210), fill=(230, 120, 30))
    return scene


def _answer_enum(question: str) -> tuple[list[str], str]:
    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.toolbox import VisionToolbox
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.config import HydraConfig
    from hydra_vr.llm.scripted import ScriptedChat
    from hydra_vr.question import parse

    tb = VisionToolbox(HydraConfig().vision)
    tb._backends["detector"] = _SeesNothing()
    tb._backends["classifier"] = _NamesTheBlob()
    chat = ScriptedChat(responses=[json.dumps({"answer": "orange"})])
    DescribeVQA(ToolContext(toolbox=tb, llm=lambda: chat, read_question=parse)).answer(_field(), question)
    return chat.calls[0].json_schema["properties"]["answer"]["enum"], chat.calls[0].last_user


def test_another_thing_standing_out_leaves_the_photos_other_colours_to_answer() -> None:
    enum, prompt = _answer_enum("What colour is the meadow around the animal?")
    assert "green" in enum and "orange" in enum  # the meadow is no fox: the grass's green may answer
    assert "red fox, says the classifier" in prompt


def test_the_thing_asked_about_standing_out_keeps_to_its_own_colours() -> None:
    enum, prompt = _answer_enum("What colour is the fox?")
    assert "orange" in enum and "green" not in enum  # a red fox is a fox: the standout is the thing asked about
    assert "says the classifier" not in prompt
