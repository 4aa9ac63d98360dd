"""verify_property's question: a part the thing has ("Does the kettle have a spout?") or a state ("Is it hot?")."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from hydra_vr.api.properties import names_a_part, property_caption, property_question


@pytest.mark.parametrize("prop", ["spout", "lid", "long tail", "antennas", "steering wheel"])
def test_a_thing_the_object_has_is_asked_as_having(prop: str) -> None:
    assert names_a_part(prop)
    assert property_question("kettle", prop).startswith("Does the kettle have ")


@pytest.mark.parametrize("prop", ["hot", "wooden", "made of glass", "open", "plumber", "kitten", "wool", "shiny metal"])
def test_a_state_a_kind_or_a_material_is_asked_as_being(prop: str) -> None:
    assert not names_a_part(prop)
    assert property_question("kettle", prop) == f"Is the kettle {prop}?"


def test_the_article_follows_the_word_and_the_number() -> None:
    assert property_question("teapot", "spout") == "Does the teapot have a spout?"
    assert property_question("jug", "ornate handle") == "Does the jug have an ornate handle?"
    assert property_question("lorry", "wheels") == "Does the lorry have wheels?"
    assert property_caption("jug", "spout") == "a photo of a jug with a spout"
    assert property_caption("jug", "blue") == "a photo of a blue jug"


def test_verify_property_asks_the_vqa_backend_whether_the_thing_has_the_part(photo) -> None:
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_toolbox
    from hydra_vr.llm.scripted import ScriptedChat

    asked: list[str] = []

    def reply(messages) -> str:
        asked.append(messages[-1].content)
        return json.dumps({"answer": "yes"})

    chat = ScriptedChat(rule=reply)
    tb = build_toolbox(load_config("default"), llm=lambda: chat)
    image = Image.open(photo("coffee")).convert("RGB")
    verdict, _ = tb.verify_property(image, "mug", "handle")
    assert verdict and any("Does the mug have a handle?" in text for text in asked)
    assert not any("Is the mug handle?" in text for text in asked)
