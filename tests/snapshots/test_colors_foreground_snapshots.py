"""Colours read over an object's own pixels: snapshots on the labelled photos and questions.

These tests pin behaviour on the labelled real photos and their labelled questions and expressions
(benchmarks/real_photos/questions.jsonl): the tools run on a labelled photo with a labelled question or
expression, and what is expected is what that photo shows (measured colours, text read, places, boxes
drawn by hand). They are snapshots of behaviour on the benchmark's own items, not mechanism tests; the
mechanism tests, with phrasings of their own, are in tests/test_colors_foreground.py.
"""

from __future__ import annotations

import pytest
from PIL import Image


@pytest.mark.slow
def test_describe_keeps_a_colour_answer_to_the_colours_measured(embedded_toolbox, photo) -> None:
    # The LLM sees no pixels: asked "What color is the saucer?" beside "red 51%", the 1.5B said "white".
    # Its schema offers only what the tools measured on what the question names, else on the subject.
    import json

    from hydra_vr.api.backends.describe import DescribeVQA
    from hydra_vr.api.tools import ToolContext
    from hydra_vr.llm.scripted import ScriptedChat

    chat = ScriptedChat(responses=[json.dumps({"answer": a}) for a in ("red", "gray", "blue")])
    d = DescribeVQA(ToolContext(toolbox=embedded_toolbox, llm=lambda: chat))

    def offered(i: int) -> set[str]:
        return set(chat.calls[i].json_schema["properties"]["answer"]["enum"])

    coffee = Image.open(photo("coffee")).convert("RGB")
    assert d.answer(coffee, "What color is the saucer?").text == "red"
    assert "red" in offered(0) and "maroon" in offered(0) and "white" not in offered(0)  # the subject's colours only
    # "the hair of the man on the right": his head's colours, not the whole person's (their suits: black 89%)
    zidane = Image.open(photo("zidane")).convert("RGB")
    assert d.answer(zidane, "What color is the hair of the man on the right?").text == "gray"
    # ... and his alone: the man on the left's head (brown 37%) is not the man on the right's hair
    assert {"gray", "silver"} <= offered(1) and not {"brown", "black", "red"} & offered(1)  # under 20% or the other's
    assert "person (score" in chat.calls[1].last_user and "colours black 89%" not in chat.calls[1].last_user
    # nothing measured on the bus beats the bus's own colours; the sky is not asked about
    bus = Image.open(photo("bus")).convert("RGB")
    assert d.answer(bus, "What color is the bus?").text == "blue"
    assert "blue" in offered(2) and "navy" in offered(2) and "green" not in offered(2)
